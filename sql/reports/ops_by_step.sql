-- ops-by-step: the CPU operators that take the most self time in each profiler step.
-- question: Which CPU operators take the most CPU time in each ProfilerStep?
--
-- An operator belongs to the step whose host-side window [start, end) holds
-- its start, on any thread of the trace (the backward pass runs on autograd's
-- own thread inside the step). Per step and operator name: calls, self and
-- inclusive CPU time; the steps' own annotations are not operators. Ranked
-- by self time within each step (ties by name).
--
-- option: --limit/-n INTEGER >= 0 = 5  operators per step (0 = all)
-- requires: cpu_ops, steps, trace_files
--
-- Columns:
-- run       VARCHAR  run label
-- rank      INTEGER  rank of the trace
-- trace_id  INTEGER  trace
-- step      BIGINT   N of ProfilerStep#N, or its place in time order where N repeat (the steps view)
-- op_rank   BIGINT   1, 2, ... by self time within the step
-- name      VARCHAR  operator name
-- calls     BIGINT   calls that started in the step
-- self_us   DOUBLE   their self CPU time, µs
-- total_us  DOUBLE   their inclusive CPU time, µs
-- self_pct  DOUBLE   self_us / the step's duration, %
{% from "templates/scope.sql" import run_scope with context %}
WITH s AS (
    SELECT trace_id, step, ts_ns, end_ns, dur_ns FROM steps
    WHERE TRUE {{ run_scope() }}
),
o AS (
    SELECT s.trace_id, s.step, s.dur_ns AS step_ns, c.name, c.self_ns, c.dur_ns
    FROM cpu_ops c
    ASOF JOIN s ON s.trace_id = c.trace_id AND c.ts_ns >= s.ts_ns
    WHERE c.ts_ns < s.end_ns AND NOT starts_with(c.name, 'ProfilerStep#')
),
per_op AS (
    SELECT trace_id, step, name, any_value(step_ns) AS step_ns, count(*) AS calls,
           sum(self_ns) AS self_ns, sum(dur_ns) AS total_ns
    FROM o GROUP BY trace_id, step, name
),
ranked AS (
    SELECT *, row_number() OVER (PARTITION BY trace_id, step ORDER BY self_ns DESC, name) AS op_rank
    FROM per_op
    {%- if limit %}
    QUALIFY op_rank <= $limit
    {%- endif %}
)
SELECT f.run, f.rank, r.trace_id, r.step, r.op_rank, r.name, r.calls,
       r.self_ns / 1e3 AS self_us, r.total_ns / 1e3 AS total_us,
       100.0 * r.self_ns / nullif(r.step_ns, 0) AS self_pct
FROM ranked r
JOIN trace_files f USING (trace_id)
ORDER BY f.run, f.rank NULLS LAST, r.trace_id, r.step, r.op_rank

-- @notes
SELECT f.file_name || ': no ProfilerStep#N annotations in this trace, so no steps' AS note
FROM trace_files f
WHERE NOT EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = f.trace_id)
  {{ run_scope('f.') }}
ORDER BY f.trace_id
