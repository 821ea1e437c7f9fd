-- idle: who starves the GPU: its idle time attributed to the host code running
-- during it, one row per name (operator, Python function, annotation, runtime call).
-- question: Which host code leaves the GPU idle?
--
-- GPU idle time is gpu-time's and temporal's: the gaps between the device's
-- merged busy intervals inside its GPU window (gpu_idle_intervals, scope
-- 'device'; with --exclude-last-step / --hta the window ends with the kept
-- work). The GPU waits, in a gap, for the work that ends it: the gap goes to
-- the host thread that launched that work, and each of its instants to the
-- innermost host event running then on that thread (cpu_ops,
-- python_functions, user_annotations, runtime calls): an event's idle_us is
-- the idle inside it minus the idle inside its children. ProfilerStep#N
-- annotations (steps), which enclose everything, are left out. Two rows of
-- kind 'none' hold the rest: '(no host event)', idle while the launching
-- thread ran no host event but a step (Python code between operators in a
-- trace without Python stacks), and '(no launch call)', gaps ended by work
-- whose launch call is not in the trace. A device's rows add up to its idle
-- time (gpu-time's idle_us).
-- source: for the call of the name with the most idle time, the innermost
-- Python frame 'file.py(N): f' enclosing it (or itself) outside torch's own
-- files (templates/frames.sql user_frame; traces recorded with
-- with_stack=True only).
-- Difference from torch's BasicEvaluation, which ranks single calls by the
-- idle time inside them (so the step annotation ranks first): `--by event`.
--
-- uses: device, gpu_window
-- option: --limit/-n INTEGER >= 0 = 20  rows per trace and device (0 = all)
-- option: --by CHOICE(event)  one row per call instead, ranked as torch's BasicEvaluation (sql/reports/idle_events.sql)
-- requires: gpu_idle_intervals, gpu_activity, cpu_ops, python_functions, user_annotations, runtime, steps, gpu_windows, trace_files, launches
--
-- Columns:
-- run             VARCHAR  run label
-- rank            INTEGER  rank of the trace
-- trace_id        INTEGER  trace
-- device          INTEGER  GPU index
-- kind            VARCHAR  'cpu_op', 'python_function', 'user_annotation', 'runtime' or 'none'
-- name            VARCHAR  the host event's name ('(no host event)' or '(no launch call)' for kind 'none')
-- calls           BIGINT   calls of that name on the threads that launched the device's work (NULL for 'none')
-- idle_us         DOUBLE   GPU idle time while it was the innermost host event, µs
-- idle_share_pct  DOUBLE   idle_us / the device's idle time in its GPU window, %
-- max_call_us     DOUBLE  [wide]  the most idle time of one call, µs (NULL for 'none')
-- event_id        BIGINT  [wide]  events.event_id of that call (NULL for 'none')
-- source          VARCHAR  e.g. 'train.py(82): step': the user's frame around that call; NULL without Python stacks
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/intervals.sql" import covered_length %}
{% from "templates/frames.sql" import user_frame %}
WITH host AS (
    SELECT trace_id, event_id, 'cpu_op' AS kind, name, pid, tid, ts_ns, end_ns, parent_event_id FROM cpu_ops
    UNION ALL
    SELECT trace_id, event_id, 'python_function', name, pid, tid, ts_ns, end_ns, parent_event_id FROM python_functions
    UNION ALL
    SELECT trace_id, event_id, 'user_annotation', name, pid, tid, ts_ns, end_ns, parent_event_id FROM user_annotations
    UNION ALL
    SELECT trace_id, event_id, 'runtime', name, pid, tid, ts_ns, end_ns, parent_event_id FROM runtime
),
idle AS (  -- the device's idle gaps in its GPU window
    SELECT trace_id, device, start_ns, end_ns, next_event_id, next_launch_ts_ns
    FROM gpu_idle_intervals(exclude_last_step := $exclude_last_step OR $hta, hta := $hta) i
    WHERE scope = 'device' AND dur_ns > 0 {{ scope('i.') }}
),
gaps AS (  -- each with the thread that launched the work ending it (gpu_activity.launch_event_id)
    SELECT i.trace_id, i.device, i.start_ns, i.end_ns, l.pid, l.tid
    FROM idle i
    LEFT JOIN (
        -- without --hta, the launch call is gpu_activity's, the launches view's
        -- (the first runtime call of the work's correlation): its thread
        SELECT l.trace_id, l.event_id AS next_event_id, l.pid, l.tid
        FROM launches l
        WHERE NOT $hta AND l.launch_event_id IS NOT NULL
        UNION ALL
        -- with --hta, HTA's link (planned empty without --hta)
        SELECT a.trace_id, a.event_id, h.pid, h.tid
        FROM (SELECT DISTINCT trace_id, event_id, launch_event_id
              FROM gpu_activity(exclude_last_step := true, hta := $hta) WHERE $hta) a
        JOIN host h ON h.trace_id = a.trace_id AND h.event_id = a.launch_event_id
    ) l ON l.trace_id = i.trace_id AND l.next_event_id = i.next_event_id
),
threads AS (  -- numbered: one join key
    SELECT *, row_number() OVER () AS thread_no
    FROM (SELECT DISTINCT trace_id, device, pid, tid FROM gaps WHERE pid IS NOT NULL)
),
ev AS (  -- host events on those threads, once per device
    SELECT h.*, t.device, t.thread_no,
           EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = h.trace_id AND s.event_id = h.event_id) AS is_step
    FROM host h
    JOIN threads t USING (trace_id, pid, tid)
    WHERE h.end_ns >= h.ts_ns
),
thread_gaps AS (
    SELECT t.thread_no, g.start_ns, g.end_ns FROM gaps g JOIN threads t USING (trace_id, device, pid, tid)
),
inclusive AS (  -- idle inside each event (of the gaps its thread ended)
    {{ covered_length('(SELECT thread_no, event_id, ts_ns, end_ns FROM ev)', 'thread_gaps', ['thread_no']) | indent(4) }}
),
attributed AS (  -- minus the idle inside its children: the idle while it was innermost
    SELECT e.*, i.covered_ns - coalesce(c.children_ns, 0) AS idle_ns
    FROM ev e
    JOIN inclusive i USING (thread_no, event_id)
    LEFT JOIN (SELECT e.trace_id, e.device, e.parent_event_id, sum(i.covered_ns) AS children_ns
               FROM ev e JOIN inclusive i USING (thread_no, event_id)
               WHERE e.parent_event_id IS NOT NULL AND i.covered_ns <> 0
               GROUP BY ALL) c
      ON c.trace_id = e.trace_id AND c.device = e.device AND c.parent_event_id = e.event_id
),
idle_total AS (  -- thread_ns: the part of it ended by work with a launch call in the trace
    SELECT trace_id, device, sum(end_ns - start_ns) AS idle_ns,
           coalesce(sum(end_ns - start_ns) FILTER (WHERE pid IS NOT NULL), 0) AS thread_ns
    FROM gaps GROUP BY ALL
),
named AS (
    SELECT trace_id, device, kind, name, count(*) AS calls, sum(idle_ns) AS idle_ns,
           max(idle_ns) AS max_call_ns, arg_max(event_id, (idle_ns, -ts_ns)) AS event_id
    FROM attributed WHERE NOT is_step
    GROUP BY trace_id, device, kind, name
    HAVING sum(idle_ns) > 0
    UNION ALL
    SELECT it.trace_id, it.device, 'none', '(no host event)', NULL,
           it.thread_ns - coalesce((SELECT sum(a.idle_ns) FROM attributed a
                                    WHERE a.trace_id = it.trace_id AND a.device = it.device AND NOT a.is_step), 0),
           NULL, NULL
    FROM idle_total it
    UNION ALL
    SELECT trace_id, device, 'none', '(no launch call)', NULL, idle_ns - thread_ns, NULL, NULL
    FROM idle_total
),
top AS (
    SELECT * FROM named WHERE idle_ns > 0
    {%- if limit %}
    QUALIFY row_number() OVER (PARTITION BY trace_id, device ORDER BY idle_ns DESC, kind, name) <= $limit
    {%- endif %}
),
calls AS (  -- the call of each row with the most idle time, for its source
    SELECT DISTINCT t.trace_id, t.event_id, e.pid, e.tid, e.ts_ns, e.end_ns
    FROM top t JOIN ev e ON e.trace_id = t.trace_id AND e.event_id = t.event_id AND e.device = t.device
),
src AS (
    {{ user_frame('calls', ['trace_id', 'event_id']) | indent(4) }}
)
SELECT tr.run, tr.rank, t.trace_id, t.device, t.kind, t.name, t.calls,
       t.idle_ns / 1e3 AS idle_us, 100.0 * t.idle_ns / nullif(it.idle_ns, 0) AS idle_share_pct,
       t.max_call_ns / 1e3 AS max_call_us, t.event_id, s.source
FROM top t
JOIN trace_files tr USING (trace_id)
JOIN idle_total it USING (trace_id, device)
LEFT JOIN src s USING (trace_id, event_id)
ORDER BY tr.run, tr.rank NULLS LAST, t.trace_id, t.device, t.idle_ns DESC, t.kind, t.name

-- @notes
WITH w AS MATERIALIZED (  -- the GPU windows, once for both notes
    SELECT trace_id, device, events, unlaunched
    FROM gpu_windows(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE scope = 'device' {{ scope() }}
)
SELECT note, instead FROM (
    SELECT 0 AS k, w.trace_id, w.device,
           f.file_name || ': device ' || w.device || ' was never idle in its GPU window (' || w.events
           || ' device event(s) back to back)' AS note, false AS instead
    FROM w
    JOIN trace_files f USING (trace_id)
    WHERE NOT EXISTS (SELECT 1 FROM {{ result }} r WHERE r.trace_id = w.trace_id AND r.device = w.device)
    UNION ALL
    SELECT 1, NULL, NULL, note, instead FROM ({{ gpu_notes(need_launches=true, unlaunched=true, windows='w') | indent(19) }})
)
ORDER BY k, trace_id, device
