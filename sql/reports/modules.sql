-- modules: the nn.Module hierarchy of a with_stack / with_modules trace, and
-- per module its calls, operators, host and device time, total and self
-- (TensorBoard profiler plugin's module view).
-- question: Which nn.Module takes the time, on the host and on the device?
--
-- Modules: the python_function events named 'nn.Module: <Name>_<N>' (args
-- 'Python module id'); a module is its name and module id. Its parent: the
-- innermost module enclosing it on its thread (the plugin walks the 'Python
-- parent id' chain: the same tree, as frames nest in time). One row per
-- module per path from a root module, in tree order (children by name, as
-- the plugin sorts them); the name follows a '· ' per level below the
-- root.
-- Figures as the plugin's module view (module_op.py), summed over the calls:
-- host_us the calls' durations; self_host_us minus their direct children in
-- the plugin's tree (operators, record_function ranges, modules, runtime
-- calls, looking through Python frames that are not modules); operators the
-- direct children that are operators (cpu_op; not DataParallel.forward,
-- DistributedDataParallel.forward, Optimizer.*); device_us the kernels,
-- memcpys and memsets launched by runtime calls inside the calls on their
-- thread; self_device_us those launched by its direct runtime calls and
-- inside its direct operators (not by child modules, nor, as the plugin
-- counts, inside a direct record_function range or excluded operator). The plugin
-- keys its figures on the module alone: a module reached by two paths gets
-- each path's own figures here.
-- PyTorch Lightning: a trace with no 'nn.Module' events takes its modules
-- from the ranges '[pl][module]<class>: <name>' that Lightning's
-- PyTorchProfiler records around every submodule's forward
-- (record_module_names, its default): the module is '<name> (<class>)',
-- e.g. 'encoder.0.fc (Linear)', without a module id; its parent, as above,
-- the innermost enclosing module (Lightning's dotted names give the same tree).
-- A trace with both (with_stack under Lightning's profiler): the nn.Module
-- events are the modules, and a '[pl][module]' range, which Lightning opens in
-- a forward pre-hook inside the module's call, is looked through like a
-- Python frame: it is the module's own forward, so the operators in it are
-- the module's direct operators (as a range, it took them all: every module
-- had 0 operators, and on a GPU 0 self device time).
--
-- option: --depth INTEGER >= 0 = 0  module levels shown (1: the root modules; 0 = all)
-- example: duckprof report modules trace.json.gz --depth 2
-- requires: python_functions, host_events, runtime, launches, trace_files
--
-- Columns:
-- run             VARCHAR  run label
-- rank            INTEGER  rank of the trace
-- trace_id        INTEGER  trace
-- module          VARCHAR  the module's name without 'nn.Module: ' (Lightning: '<name> (<class>)'), after a '· '
--                          per level below the root
-- module_id       BIGINT  [wide]  args 'Python module id' (none for Lightning's)
-- level           INTEGER [wide]  1: a root module
-- path            VARCHAR [wide]  the enclosing modules and this one, separated by '/' (Lightning's: their names)
-- calls           BIGINT   calls of the module at this path
-- operators       BIGINT   operators called directly by it (not inside a child module or operator)
-- host_us         DOUBLE   host time of its calls, µs
-- self_host_us    DOUBLE   host time not in a direct child, µs
-- device_us       DOUBLE   device time of what its calls launched, µs
-- self_device_us  DOUBLE   device time launched by its own runtime calls and direct operators, µs
-- avg_us          DOUBLE   device_us per call (host_us per call when it launched nothing), µs
{% from "templates/scope.sql" import run_scope with context %}
WITH RECURSIVE nn_traces AS (  -- traces with nn.Module events (with_stack / with_modules)
    SELECT DISTINCT trace_id FROM python_functions WHERE name LIKE 'nn.Module: %' {{ run_scope() }}
),
pl_ranges AS (  -- Lightning's module ranges: '[pl][module]torch.nn.modules.linear.Linear: encoder.0.fc'
    SELECT h.trace_id, h.event_id, h.pid, h.tid, h.ts_ns, h.end_ns, h.dur_ns, h.parent_event_id,
           regexp_extract(h.name, '([^.]*): ', 1) AS class_part, substr(h.name, strpos(h.name, ': ') + 2) AS name_part
    FROM host_events h
    WHERE h.cat IN ('user_annotation', 'cpu_op') AND starts_with(h.name, '[pl][module]') {{ run_scope('h.') }}
),
mods AS (  -- the module calls: nn.Module events, else (a trace without them) Lightning's ranges
    SELECT p.trace_id, p.event_id, p.pid, p.tid, p.ts_ns, p.end_ns, p.dur_ns, p.parent_event_id,
           substr(p.name, 12) AS module, module AS path_name,
           try_cast(json_extract_string(p.args, '$."Python module id"') AS BIGINT) AS module_id
    FROM python_functions p
    WHERE p.name LIKE 'nn.Module: %' {{ run_scope('p.') }}
    UNION ALL
    SELECT trace_id, event_id, pid, tid, ts_ns, end_ns, dur_ns, parent_event_id,
           -- 'encoder.0.fc (Linear)'
           CASE WHEN name_part = '' THEN class_part ELSE name_part || ' (' || class_part || ')' END,
           CASE WHEN name_part = '' THEN class_part ELSE name_part END, NULL
    FROM pl_ranges
    WHERE trace_id NOT IN (SELECT trace_id FROM nn_traces)
),
frames AS (  -- the Python frames that are not modules: the plugin's tree has no node for them; nor
            -- for Lightning's module ranges inside the nn.Module calls of a trace with both
    SELECT trace_id, event_id, parent_event_id
    FROM python_functions
    WHERE name NOT LIKE 'nn.Module: %' {{ run_scope() }}
    UNION ALL
    SELECT trace_id, event_id, parent_event_id FROM pl_ranges WHERE trace_id IN (SELECT trace_id FROM nn_traces)
),
nodes AS (  -- the plugin's tree nodes and runtime calls: op marks the operators it counts, own what
            -- counts in a module's self device time (those operators and the runtime calls)
    SELECT h.trace_id, h.event_id, h.parent_event_id, h.pid, h.tid, h.ts_ns, h.end_ns, h.dur_ns,
           h.cat = 'cpu_op' AND h.name NOT IN ('DataParallel.forward', 'DistributedDataParallel.forward')
               AND h.name NOT LIKE 'Optimizer.%' AS op, op AS own
    FROM host_events h ANTI JOIN pl_ranges l ON l.trace_id = h.trace_id AND l.event_id = h.event_id
    WHERE h.cat IN ('cpu_op', 'user_annotation') AND h.parent_event_id IS NOT NULL {{ run_scope('h.') }}
    UNION ALL
    SELECT trace_id, event_id, parent_event_id, pid, tid, ts_ns, end_ns, dur_ns, false, true FROM runtime
    WHERE parent_event_id IS NOT NULL {{ run_scope() }}
    UNION ALL
    SELECT trace_id, event_id, parent_event_id, pid, tid, ts_ns, end_ns, dur_ns, false, false FROM mods
    WHERE parent_event_id IS NOT NULL
),
up(trace_id, event_id, at_id) AS (  -- a node's enclosing events, through non-module frames only
    SELECT n.trace_id, n.event_id, n.parent_event_id FROM nodes n
    WHERE n.parent_event_id IN (SELECT event_id FROM frames UNION ALL SELECT event_id FROM mods)
    UNION ALL
    SELECT u.trace_id, u.event_id, f.parent_event_id
    FROM up u JOIN frames f ON f.trace_id = u.trace_id AND f.event_id = u.at_id
    WHERE f.parent_event_id IS NOT NULL
),
children AS (  -- per module call, its direct children in the plugin's tree
    SELECT m.event_id AS mod_event_id, n.*
    FROM up u
    JOIN mods m ON m.trace_id = u.trace_id AND m.event_id = u.at_id
    JOIN nodes n ON n.trace_id = u.trace_id AND n.event_id = u.event_id
),
host_up(trace_id, event_id, at_id) AS (  -- a module call's enclosing events up to the next module
    SELECT trace_id, event_id, parent_event_id FROM mods WHERE parent_event_id IS NOT NULL
    UNION ALL
    SELECT u.trace_id, u.event_id, h.parent_event_id
    FROM host_up u JOIN host_events h ON h.trace_id = u.trace_id AND h.event_id = u.at_id
    WHERE h.parent_event_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM mods m WHERE m.trace_id = u.trace_id AND m.event_id = u.at_id)
),
parent AS (  -- a module call's parent module call
    SELECT u.trace_id, u.event_id, u.at_id AS parent_id
    FROM host_up u JOIN mods m ON m.trace_id = u.trace_id AND m.event_id = u.at_id
),
paths(trace_id, event_id, path, level) AS (
    SELECT m.trace_id, m.event_id, [m.path_name || '#' || coalesce(m.module_id::VARCHAR, '')], 1
    FROM mods m ANTI JOIN parent p ON p.trace_id = m.trace_id AND p.event_id = m.event_id
    UNION ALL
    SELECT m.trace_id, m.event_id, list_append(q.path, m.path_name || '#' || coalesce(m.module_id::VARCHAR, '')),
           q.level + 1
    FROM paths q
    JOIN parent p ON p.trace_id = q.trace_id AND p.parent_id = q.event_id
    JOIN mods m ON m.trace_id = p.trace_id AND m.event_id = p.event_id
),
launched AS (  -- per thread, the device time launched up to each time (prefix sums)
    SELECT trace_id, pid, tid, launch_ts_ns AS ts_ns,
           sum(sum(dur_ns)) OVER (PARTITION BY trace_id, pid, tid ORDER BY launch_ts_ns
                                  ROWS UNBOUNDED PRECEDING) AS cum_ns
    FROM launches
    WHERE launch_ts_ns IS NOT NULL AND trace_id IN (SELECT trace_id FROM mods)
    GROUP BY trace_id, pid, tid, launch_ts_ns
),
spans AS (  -- the module calls and the children that count in their self device time
    SELECT trace_id, event_id, NULL::BIGINT AS mod_event_id, pid, tid, ts_ns, end_ns FROM mods
    UNION ALL
    SELECT trace_id, event_id, mod_event_id, pid, tid, ts_ns, end_ns FROM children WHERE own
),
dev_hi AS (
    SELECT s.*, hi.cum_ns
    FROM spans s ASOF LEFT JOIN launched hi
         ON hi.trace_id = s.trace_id AND hi.pid = s.pid AND hi.tid = s.tid AND s.end_ns >= hi.ts_ns
),
dev AS (  -- per span, the device time launched inside it (by a runtime call starting in it on its thread)
    SELECT d.trace_id, d.event_id, d.mod_event_id, coalesce(d.cum_ns, 0) - coalesce(lo.cum_ns, 0) AS device_ns
    FROM dev_hi d ASOF LEFT JOIN launched lo
         ON lo.trace_id = d.trace_id AND lo.pid = d.pid AND lo.tid = d.tid AND d.ts_ns > lo.ts_ns
),
direct AS (  -- per module call: operators, host time and own device time of its direct children
    SELECT c.trace_id, c.mod_event_id, count(*) FILTER (WHERE c.op) AS operators, sum(c.dur_ns) AS child_ns,
           sum(d.device_ns) AS self_device_ns
    FROM children c
    LEFT JOIN dev d ON d.trace_id = c.trace_id AND d.event_id = c.event_id AND d.mod_event_id = c.mod_event_id
    GROUP BY c.trace_id, c.mod_event_id
),
calls AS (
    SELECT m.trace_id, m.event_id, m.module, m.module_id, q.path, q.level, m.dur_ns,
           m.dur_ns - coalesce(c.child_ns, 0) AS self_host_ns, coalesce(c.operators, 0) AS operators,
           d.device_ns, coalesce(c.self_device_ns, 0) AS self_device_ns
    FROM mods m
    JOIN paths q ON q.trace_id = m.trace_id AND q.event_id = m.event_id
    JOIN dev d ON d.trace_id = m.trace_id AND d.event_id = m.event_id AND d.mod_event_id IS NULL
    LEFT JOIN direct c ON c.trace_id = m.trace_id AND c.mod_event_id = m.event_id
),
per_path AS (
    SELECT trace_id, path, any_value(module) AS module, any_value(module_id) AS module_id, any_value(level) AS level,
           count(*) AS calls, sum(operators)::BIGINT AS operators, sum(dur_ns) AS host_ns,
           sum(self_host_ns) AS self_host_ns, sum(device_ns) AS device_ns, sum(self_device_ns) AS self_device_ns
    FROM calls
    {%- if depth %}
    WHERE level <= $depth
    {%- endif %}
    GROUP BY trace_id, path
)
SELECT f.run, f.rank, p.trace_id, repeat('· ', p.level - 1) || p.module AS module, p.module_id, p.level,
       array_to_string(list_transform(p.path, lambda x: regexp_replace(x, '#[0-9]*$', '')), '/') AS path,
       p.calls, p.operators, p.host_ns / 1e3 AS host_us, p.self_host_ns / 1e3 AS self_host_us,
       p.device_ns / 1e3 AS device_us, p.self_device_ns / 1e3 AS self_device_us,
       CASE WHEN p.device_ns > 0 THEN p.device_ns ELSE p.host_ns END / p.calls / 1e3 AS avg_us
FROM per_path p
JOIN trace_files f USING (trace_id)
ORDER BY f.run, f.rank NULLS LAST, p.trace_id, p.path

-- @notes
SELECT f.file_name || ': no nn.Module events in this trace (record with with_stack=True or with_modules=True, '
       || 'or Lightning''s PyTorchProfiler)' AS note, NOT EXISTS (SELECT 1 FROM {{ result }}) AS instead
FROM trace_files f
WHERE NOT EXISTS (SELECT 1 FROM python_functions p WHERE p.trace_id = f.trace_id AND p.name LIKE 'nn.Module: %')
  AND NOT EXISTS (SELECT 1 FROM host_events h WHERE h.trace_id = f.trace_id
                  AND h.cat IN ('user_annotation', 'cpu_op') AND starts_with(h.name, '[pl][module]'))
  {{ run_scope('f.') }}
ORDER BY f.trace_id
