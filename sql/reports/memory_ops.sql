-- memory_ops: the operators (and annotations) that allocate the most, with
-- torch's key_averages memory columns.
-- variant of: memory (with --ops; its options)
-- question: Which operators allocate the most memory?
--
-- Per operator or annotation name (cpu_ops, user_annotations; Python function
-- events count as children, not as rows), as torch's
-- key_averages counts them (sql/templates/memory.sql call_bytes): a call's
-- bytes are those of the [memory] events at times in [its start, its end], on
-- any thread of its process, net (allocations minus frees), CPU and device
-- apart; self = that minus its children's. --allocs: the same count over the
-- [memory] events of positive bytes only, their bytes and their number
-- (TensorBoard's memory view's allocation size and count; an option: two more
-- passes over the [memory] events, ~+25% CPU for the report on a 100 MB trace).
-- Ordered by self device bytes, then
-- self CPU bytes; --limit names per trace. `report ops --sort self_device_mem` lists every
-- event kind (Python functions, runtime calls) with torch's other columns.
--
-- requires: memory_events, call_totals, cpu_ops, user_annotations, python_functions, trace_files
--
-- Columns:
-- run                    VARCHAR  run label
-- rank                   INTEGER  rank of the trace
-- trace_id               INTEGER  trace
-- name                   VARCHAR  operator or annotation name ('ProfilerStep*' for every ProfilerStep#N)
-- calls                  BIGINT   calls
-- self_device_mem_bytes  BIGINT   device bytes allocated (net) by its calls, not by their children
-- device_mem_bytes       BIGINT   device bytes allocated (net) during its calls
-- self_cpu_mem_bytes     BIGINT   CPU bytes allocated (net) by its calls, not by their children
-- cpu_mem_bytes          BIGINT   CPU bytes allocated (net) during its calls
-- self_device_alloc_bytes  BIGINT  device bytes of the allocations of its calls, not of their children;
--                                  frees not counted, here and below (only with --allocs)
-- device_alloc_bytes     BIGINT   device bytes of the allocations during its calls (only with --allocs)
-- self_device_allocs     BIGINT   device allocations of its calls, not of their children (only with --allocs)
-- device_allocs          BIGINT   device allocations during its calls (only with --allocs)
-- self_cpu_alloc_bytes   BIGINT   CPU bytes of the allocations of its calls, not of their children
--                                 (only with --allocs)
-- cpu_alloc_bytes        BIGINT   CPU bytes of the allocations during its calls (only with --allocs)
-- self_cpu_allocs        BIGINT   CPU allocations of its calls, not of their children (only with --allocs)
-- cpu_allocs             BIGINT   CPU allocations during its calls (only with --allocs)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/memory.sql" import memory_notes, dropped_names, memory_bytes, call_bytes with context %}
WITH calls0 AS (  -- Python function events are calls too (their children's bytes are not their parent's self);
                  -- the names torch drops are none (nor a sibling that keeps a call from being merged)
    SELECT trace_id, event_id, parent_event_id, pid, ts_ns, end_ns,
           CASE WHEN starts_with(name, 'ProfilerStep#') THEN 'ProfilerStep*' ELSE name END AS key, annotation, python
    FROM (SELECT trace_id, event_id, parent_event_id, pid, ts_ns, end_ns, name, false AS annotation, false AS python
          FROM cpu_ops
          UNION ALL
          SELECT trace_id, event_id, parent_event_id, pid, ts_ns, end_ns, name, true, false FROM user_annotations
          UNION ALL
          SELECT trace_id, event_id, parent_event_id, pid, ts_ns, end_ns, name, false, true FROM python_functions)
    WHERE trace_id IN (SELECT trace_id FROM memory_events) {{ run_scope() }} AND name NOT IN {{ dropped_names() }}
),
calls AS (  -- merged: a call that is its parent's only child and has its name (torch's _remove_dup_nodes)
    SELECT c.*, hash(c.key, c.annotation) AS kh, hash(p.key, p.annotation) AS pkh,
           p.key IS NOT DISTINCT FROM c.key
               AND count(*) OVER (PARTITION BY c.trace_id, c.parent_event_id) = 1 AS merged
    FROM calls0 c
    LEFT JOIN calls0 p ON p.trace_id = c.trace_id AND p.event_id = c.parent_event_id
),
bytes AS (  -- each call's [memory] bytes, computed at load (call_totals; templates/memory.sql call_bytes);
            -- a merged call is not one (its bytes are its parent's; its children's parent has the same key)
    SELECT c.trace_id, c.kh, c.pkh, t.cpu_mem_bytes AS cpu_mem, t.device_mem_bytes AS dev_mem
    FROM calls c
    JOIN call_totals t ON t.trace_id = c.trace_id AND t.event_id = c.event_id
    WHERE (t.cpu_mem_bytes <> 0 OR t.device_mem_bytes <> 0) AND NOT c.merged
),
{%- if allocs %}
alloc_events AS (  -- the allocations: [memory] events of positive bytes (a free is negative)
    SELECT trace_id, pid, ts_ns, {{ memory_bytes() }}
    FROM memory_events
    WHERE bytes > 0 {{ run_scope() }}
),
unmerged AS (SELECT * FROM calls WHERE NOT merged),
alloc_bytes AS (  -- each call's allocated bytes, counted as its net bytes (call_bytes), at report time:
                  -- call_totals stores only the net
    {{ call_bytes('unmerged', 'alloc_events') | indent(4) }}
),
alloc_counts AS (  -- ... and how many: the same sums over 1 per allocation
    {{ call_bytes('(SELECT * FROM unmerged WHERE (trace_id, kh) IN (SELECT (trace_id, kh) FROM alloc_bytes))',
                  '(SELECT trace_id, pid, ts_ns, sign(cpu_b) AS cpu_b, sign(dev_b) AS dev_b FROM alloc_events)')
      | indent(4) }}
),
{%- endif %}
per_call AS (
    SELECT trace_id, kh, pkh, cpu_mem, dev_mem, 0 AS cpu_ab, 0 AS dev_ab, 0 AS cpu_an, 0 AS dev_an FROM bytes
    {%- if allocs %}
    UNION ALL
    SELECT trace_id, kh, pkh, 0, 0, cpu_mem, dev_mem, 0, 0 FROM alloc_bytes
    UNION ALL
    SELECT trace_id, kh, pkh, 0, 0, 0, 0, cpu_mem, dev_mem FROM alloc_counts
    {%- endif %}
),
own AS (SELECT trace_id, kh, sum(cpu_mem) AS cpu_mem, sum(dev_mem) AS dev_mem, sum(cpu_ab) AS cpu_ab,
               sum(dev_ab) AS dev_ab, sum(cpu_an) AS cpu_an, sum(dev_an) AS dev_an
        FROM per_call GROUP BY ALL),
kids AS (SELECT trace_id, pkh AS kh, sum(cpu_mem) AS cpu_mem, sum(dev_mem) AS dev_mem, sum(cpu_ab) AS cpu_ab,
                sum(dev_ab) AS dev_ab, sum(cpu_an) AS cpu_an, sum(dev_an) AS dev_an
         FROM per_call WHERE pkh IS NOT NULL GROUP BY ALL),
names AS (SELECT trace_id, kh, any_value(key) AS name, count(*) FILTER (WHERE NOT merged) AS calls
          FROM calls WHERE NOT python GROUP BY ALL),
report AS (
    SELECT f.run, f.rank, n.trace_id, n.name, n.calls,
           (coalesce(o.dev_mem, 0) - coalesce(k.dev_mem, 0))::BIGINT AS self_device_mem_bytes,
           coalesce(o.dev_mem, 0)::BIGINT AS device_mem_bytes,
           (coalesce(o.cpu_mem, 0) - coalesce(k.cpu_mem, 0))::BIGINT AS self_cpu_mem_bytes,
           coalesce(o.cpu_mem, 0)::BIGINT AS cpu_mem_bytes
           {%- if allocs %},
           (coalesce(o.dev_ab, 0) - coalesce(k.dev_ab, 0))::BIGINT AS self_device_alloc_bytes,
           coalesce(o.dev_ab, 0)::BIGINT AS device_alloc_bytes,
           (coalesce(o.dev_an, 0) - coalesce(k.dev_an, 0))::BIGINT AS self_device_allocs,
           coalesce(o.dev_an, 0)::BIGINT AS device_allocs,
           (coalesce(o.cpu_ab, 0) - coalesce(k.cpu_ab, 0))::BIGINT AS self_cpu_alloc_bytes,
           coalesce(o.cpu_ab, 0)::BIGINT AS cpu_alloc_bytes,
           (coalesce(o.cpu_an, 0) - coalesce(k.cpu_an, 0))::BIGINT AS self_cpu_allocs,
           coalesce(o.cpu_an, 0)::BIGINT AS cpu_allocs
           {%- endif %}
    FROM names n
    JOIN trace_files f USING (trace_id)
    LEFT JOIN own o USING (trace_id, kh)
    LEFT JOIN kids k USING (trace_id, kh)
    WHERE o.kh IS NOT NULL OR k.kh IS NOT NULL
)
SELECT * FROM report
{%- if limit %}
QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY self_device_mem_bytes DESC, self_cpu_mem_bytes DESC, name)
        <= $limit
{%- endif %}
ORDER BY run, rank NULLS LAST, trace_id, self_device_mem_bytes DESC, self_cpu_mem_bytes DESC, name

-- @notes
{{ memory_notes() }}
