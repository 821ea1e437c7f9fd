-- ops_graph_nodes: CPU operators and the device work they launched, per
-- torch.compile FX graph node.
-- variant of: ops (with --by-graph-node; its options)
-- question: Which nodes of the compiled graphs take the CPU and device time?
--
-- In traces of torch.compile'd code, cpu_op markers named '## <file>.py ##'
-- bracket the ops of a compiled graph module (its generated file) and
-- '## <N> ##' the ops of its FX node N (torch.profiler._utils
-- map_recorded_events_to_aten_ops_with_stack_trace reads them the same way,
-- and maps N to the node's name and stack trace through the live FX registry,
-- which a trace file does not hold: here a node is its file and index).
-- Each operator (not a marker) belongs to the innermost node marker on its
-- thread that is open at its start, and to the innermost file marker open
-- then; operators under a file marker but no node marker have graph_node
-- empty; operators under no marker are not listed. Per file and node: the
-- operators' count, self CPU time (the sum of their self times, so nested
-- operators are not counted twice), the outermost operators' CPU time, and the
-- kernels / memcpys / memsets they launched (launches) with their device time.
--
-- requires: cpu_ops, launches, trace_files, user_annotations
--
-- Columns:
-- run            VARCHAR  run label
-- rank           INTEGER  rank of the trace
-- trace_id       INTEGER  trace
-- graph_file     VARCHAR  the compiled module's file, from '## <file>.py ##'
-- graph_node     BIGINT   the FX node index N of '## N ##' (empty: outside every node marker)
-- ops            BIGINT   operators in it
-- top_ops        VARCHAR  the outermost operators' names, most frequent first, ', '-separated (up to 5)
-- self_cpu_us    DOUBLE   their self CPU time, µs
-- cpu_total_us   DOUBLE   the CPU time of its outermost operators, µs
-- kernels        BIGINT   device events launched by its operators
-- device_us      DOUBLE   their device time, µs
-- device_pct     DOUBLE   device_us / the device time of every node of the trace, %
{% from "templates/scope.sql" import run_scope with context %}
{%- set orders = {
    'self_cpu': 'self_cpu_us DESC', 'cpu_total': 'cpu_total_us DESC', 'self_device': 'device_us DESC',
    'device_total': 'device_us DESC', 'count': 'ops DESC', 'cpu_mem': 'self_cpu_us DESC',
    'self_cpu_mem': 'self_cpu_us DESC', 'device_mem': 'device_us DESC', 'self_device_mem': 'device_us DESC',
    'flops': 'device_us DESC', 'name': 'graph_file, graph_node'} %}
WITH scope AS (
    SELECT trace_id, run, rank FROM trace_files WHERE TRUE {{ run_scope() }}
),
c AS (
    SELECT trace_id, event_id, name, pid, tid, ts_ns, end_ns, self_ns, op_event_id,
           starts_with(name, '## ') AND ends_with(name, ' ##') AS marker,
           name[4:-4] AS content
    FROM cpu_ops
    WHERE trace_id IN (SELECT trace_id FROM scope)
),
files AS (
    SELECT trace_id, pid, tid, ts_ns, end_ns, content AS graph_file FROM c WHERE marker AND ends_with(content, '.py')
),
nodes AS (
    SELECT trace_id, pid, tid, ts_ns, end_ns, try_cast(content AS BIGINT) AS graph_node
    FROM c WHERE marker AND try_cast(content AS BIGINT) IS NOT NULL
),
ops AS (  -- each operator in the file and node markers open at its start
    SELECT o.trace_id, o.event_id, o.name, o.ts_ns, o.end_ns, o.self_ns, o.op_event_id,
           f.graph_file, CASE WHEN o.ts_ns < n.end_ns AND n.ts_ns >= f.ts_ns THEN n.graph_node END AS graph_node
    FROM (SELECT * FROM c WHERE NOT marker) o
    ASOF JOIN files f ON f.trace_id = o.trace_id AND f.pid = o.pid AND f.tid = o.tid AND o.ts_ns >= f.ts_ns
    ASOF LEFT JOIN nodes n ON n.trace_id = o.trace_id AND n.pid = o.pid AND n.tid = o.tid AND o.ts_ns >= n.ts_ns
    WHERE o.ts_ns < f.end_ns
),
top AS (  -- the outermost operators of each node: their enclosing operator is a marker or outside it
    SELECT o.* FROM ops o
    LEFT JOIN ops p ON p.trace_id = o.trace_id AND p.event_id = o.op_event_id
    WHERE p.event_id IS NULL OR p.graph_file IS DISTINCT FROM o.graph_file OR p.graph_node IS DISTINCT FROM o.graph_node
),
dev AS (
    SELECT o.trace_id, o.graph_file, o.graph_node, count(*) AS kernels, sum(l.dur_ns) AS device_ns
    FROM launches l JOIN ops o ON o.trace_id = l.trace_id AND o.event_id = l.op_event_id
    GROUP BY ALL
),
per_node AS (
    SELECT trace_id, graph_file, graph_node, count(*) AS ops, sum(self_ns) AS self_ns
    FROM ops GROUP BY ALL
),
per_top AS (
    SELECT trace_id, graph_file, graph_node, sum(end_ns - ts_ns) AS total_ns FROM top GROUP BY ALL
),
top_names AS (
    SELECT trace_id, graph_file, graph_node, string_agg(name, ', ' ORDER BY n DESC, name) AS top_ops
    FROM (SELECT *, row_number() OVER (PARTITION BY trace_id, graph_file, graph_node ORDER BY n DESC, name) AS rn
          FROM (SELECT trace_id, graph_file, graph_node, name, count(*) AS n
                FROM top GROUP BY trace_id, graph_file, graph_node, name))
    WHERE rn <= 5
    GROUP BY trace_id, graph_file, graph_node
),
report AS (
    SELECT s.run, s.rank, p.trace_id, p.graph_file, p.graph_node, p.ops, nm.top_ops,
           p.self_ns / 1e3 AS self_cpu_us, coalesce(t.total_ns, 0) / 1e3 AS cpu_total_us,
           coalesce(d.kernels, 0) AS kernels, coalesce(d.device_ns, 0) / 1e3 AS device_us,
           100.0 * coalesce(d.device_ns, 0) / nullif(sum(d.device_ns) OVER (PARTITION BY p.trace_id), 0) AS device_pct
    FROM per_node p
    JOIN scope s USING (trace_id)
    LEFT JOIN per_top t ON t.trace_id = p.trace_id AND t.graph_file = p.graph_file
                       AND t.graph_node IS NOT DISTINCT FROM p.graph_node
    LEFT JOIN top_names nm ON nm.trace_id = p.trace_id AND nm.graph_file = p.graph_file
                          AND nm.graph_node IS NOT DISTINCT FROM p.graph_node
    LEFT JOIN dev d ON d.trace_id = p.trace_id AND d.graph_file = p.graph_file
                   AND d.graph_node IS NOT DISTINCT FROM p.graph_node
)
SELECT * FROM report
{%- if limit %}
QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY {{ orders[sort] }}, graph_file, graph_node NULLS FIRST) <= $limit
{%- endif %}
ORDER BY run, rank NULLS LAST, trace_id, {{ orders[sort] }}, graph_file, graph_node NULLS FIRST

-- @notes
-- Without markers, how to get them: torch.fx writes them when
-- torch.fx.experimental._config.enrich_profiler_metadata is set, into the FX
-- code that backends such as aot_eager run; Inductor runs its own output code
-- (no node markers), each call a '## Call CompiledFxGraph <key> ##' annotation.
WITH inductor AS (
    SELECT trace_id, count(*) AS calls, count(DISTINCT name) AS graphs
    FROM user_annotations
    WHERE name LIKE '## Call CompiledFxGraph % ##'
    GROUP BY trace_id
)
SELECT f.file_name || ': no torch.compile graph markers (''## <file>.py ##'' cpu_ops) in this trace'
       || CASE WHEN i.calls IS NOT NULL
               THEN ': its compiled graphs ran as Inductor output code, which has none (' || i.graphs::VARCHAR
                    || ' graph(s), ' || i.calls::VARCHAR || ' call(s): the ''## Call CompiledFxGraph <key> ##'' rows'
                    || ' of report ops)'
               ELSE '' END
       || '; torch.fx writes them with torch.fx.experimental._config.enrich_profiler_metadata = True, in the'
       || ' FX code of backends that run it (e.g. aot_eager)' AS note
FROM trace_files f
LEFT JOIN inductor i USING (trace_id)
WHERE NOT EXISTS (SELECT 1 FROM {{ result }} r WHERE r.trace_id = f.trace_id) {{ run_scope('f.') }}
ORDER BY f.trace_id
