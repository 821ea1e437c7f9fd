-- idle_events: which CPU op calls leave the GPU idle, ranked like torch.profiler._utils.
-- BasicEvaluation (rank_events / get_optimizable_events), per trace and device.
-- variant of: idle (with --by event; its options)
-- question: Which single CPU operator calls leave the GPU idle?
--
-- GPU idle time here is BasicEvaluation's: the time when the device's queue is
-- empty (queue_depth(per_device := true) = 0: nothing launched and unfinished,
-- i.e. outside the union of [launch call start, event end] of every device
-- event), including all time before the first launch and after the last device
-- event ends. gpu_idle_us of an op = that idle time inside [op start, op end];
-- idle_pct = gpu_idle_us / dur_us (BasicEvaluation's fraction_idle_time).
--
-- Ranking (BasicEvaluation.rank_events): ops that overlap an interval in which
-- the device queue drains from a peak >= 4 to 0 (queue_drains view) are the
-- candidates; each gets score = z(idle fraction) + 0.6 * z(self time), with
-- z over the candidates of the trace and device (sample standard deviation, as
-- torch.std; a z term is 0 when all candidates have the same value).
-- idle_rank orders the candidates by score (1 = first to optimize); other ops
-- have no rank and are listed after them by gpu_idle_us.
-- Deliberate differences from BasicEvaluation: its queue depth counts kernels
-- launched but not yet started, over all devices, launched by cudaLaunchKernel*
-- only; ours (queue_depth view) counts every device event (kernels, memcpys,
-- memsets) from its launch call's start to its end, per device. It ranks every
-- event of the profiler tree; we rank cpu_ops, without the ProfilerStep#N
-- annotations (steps), which enclose everything. Its interval overlap helper
-- can skip an interval after a nested one; we take the exact overlap. With
-- --exclude-last-step / --hta, the ops that start after the last step began
-- are left out with the device work they launched.
--
-- source: the innermost enclosing Python frame 'file.py(line): func' on the
-- op's thread outside torch's own files (templates/frames.sql user_frame; only
-- in traces recorded with with_stack=True). BasicEvaluation's
-- source_code_location takes the innermost frame, often torch's own
-- (torch/utils/_device.py, torch/nn/modules/module.py).
--
-- uses: device, gpu_window
-- option: --limit/-n INTEGER >= 0 = 20  ops per trace and device (0 = all)
-- requires: gpu_activity, queue_drains, gpu_windows, cpu_ops, steps, python_functions, trace_files, launches
--
-- Columns:
-- run          VARCHAR  run label
-- rank         INTEGER  rank of the trace
-- trace_id     INTEGER  trace
-- device       INTEGER  GPU index
-- idle_rank    BIGINT   1, 2, ... for the candidates (highest score first); NULL otherwise
-- op           VARCHAR  cpu_ops.name
-- event_id     BIGINT  [wide]  cpu_ops.event_id
-- ts_ms        DOUBLE  [wide]  op start, ms after the trace's first complete event (trace_files.first_ts_ns)
-- dur_us       DOUBLE   op duration, µs
-- self_us      DOUBLE   op self time, µs
-- gpu_idle_us  DOUBLE   GPU idle time during the op, µs
-- idle_pct     DOUBLE   gpu_idle_us / dur_us, %
-- score        DOUBLE   z(idle fraction) + 0.6 * z(self time); NULL when not a candidate
-- source       VARCHAR  e.g. 'train.py(82): step', the user's frame around the op; NULL without Python stacks
{% from "templates/scope.sql" import scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/intervals.sql" import merged_intervals, covered_length, overlaps_any %}
{% from "templates/frames.sql" import user_frame %}
WITH act AS (  -- every device event with a launch call: queued from the call's start to its end
    SELECT trace_id, device, launch_ts_ns AS s, greatest(end_ns, launch_ts_ns) AS e
    FROM gpu_activity(exclude_last_step := $exclude_last_step OR $hta, hta := $hta)
    WHERE launch_ts_ns IS NOT NULL {{ scope() }}
),
-- the device queue is non-empty exactly on the union of those intervals; GPU
-- idle time is everything else
queued AS (
    {{ merged_intervals('act', ['trace_id', 'device'], s='s', e='e', order=['e']) | indent(4) }}
),
falling AS (  -- drain intervals, merged (they do not overlap; merging makes sure)
    {{ merged_intervals("(SELECT * FROM queue_drains(exclude_last_step := $exclude_last_step OR $hta,
                                                     hta := $hta) WHERE TRUE " ~ scope() ~ ")",
                        ['trace_id', 'device'], s='start_ns', e='end_ns') | indent(4) }}
),
last_step AS (  -- with --exclude-last-step / --hta: where the last step begins (2+ steps)
    SELECT trace_id, max(ts_ns) AS ts_ns FROM steps
    WHERE $exclude_last_step OR $hta
    GROUP BY trace_id HAVING count(DISTINCT step) >= 2
),
devs AS (  -- the devices with queued work, numbered: one join key
    SELECT *, row_number() OVER () AS dev_no FROM (SELECT DISTINCT trace_id, device FROM queued)
),
queued_k AS (
    SELECT d.dev_no, q.start_ns, q.end_ns FROM queued q JOIN devs d USING (trace_id, device)
),
falling_k AS (
    SELECT d.dev_no, f.start_ns, f.end_ns FROM falling f JOIN devs d USING (trace_id, device)
),
ops AS (  -- every cpu_op but the steps once per device with queued work in its trace
    SELECT o.trace_id, d.device, d.dev_no, o.event_id, o.ts_ns, o.end_ns, o.dur_ns, o.self_ns
    FROM cpu_ops o JOIN devs d USING (trace_id)
    LEFT JOIN last_step l USING (trace_id)
    WHERE o.event_id NOT IN (SELECT s.event_id FROM steps s WHERE s.trace_id = o.trace_id)
      AND (l.ts_ns IS NULL OR o.ts_ns < l.ts_ns)
),
with_queued AS (
    {{ covered_length('ops', 'queued_k', ['dev_no']) | indent(4) }}
),
measured AS (
    -- idle during the op = its duration minus the time the queue was non-empty;
    -- a candidate overlaps a drain interval (by a stretch of positive length)
    SELECT trace_id, device, event_id, ts_ns, end_ns, dur_ns, self_ns,
           dur_ns - covered_ns AS gpu_idle_ns, candidate
    FROM ({{ overlaps_any('with_queued', 'falling_k', ['dev_no'], name='candidate') | indent(10) }}) f
),
cand AS (
    SELECT *, coalesce(gpu_idle_ns / nullif(dur_ns, 0), 0) AS idle_frac
    FROM measured
),
stats AS (
    -- mean and deviation from exact integer sums (idle fractions in units of
    -- 1e-12): DuckDB's avg and stddev of doubles add in an order that varies
    -- between runs, and so did the scores' last digits and the order of near
    -- ties. n * sum(x^2) - sum(x)^2 is exact in HUGEINT up to about 1e7
    -- candidates a device; past that (try: NULL) the double variance.
    SELECT trace_id, device, q1 / n / 1e12 AS idle_mean, s1 / n AS self_mean,
           CASE WHEN n > 1 THEN coalesce(try(n * q2 - q1 * q1) / (n * (n - 1.0)), q_var) ** 0.5 / 1e12 END AS idle_sd,
           CASE WHEN n > 1 THEN coalesce(try(n * s2 - s1 * s1) / (n * (n - 1.0)), s_var) ** 0.5 END AS self_sd
    FROM (SELECT trace_id, device, count(*) AS n,
                 sum(q) AS q1, sum(q * q) AS q2, var_samp(q) AS q_var,
                 sum(s) AS s1, sum(s * s) AS s2, var_samp(s) AS s_var
          FROM (SELECT trace_id, device, round(idle_frac * 1e12)::HUGEINT AS q, self_ns::HUGEINT AS s
                FROM cand WHERE candidate)
          GROUP BY trace_id, device)
),
scored AS (
    SELECT c.*,
           CASE WHEN c.candidate THEN
               coalesce((c.idle_frac - s.idle_mean) / nullif(s.idle_sd, 0), 0)
             + 0.6 * coalesce((c.self_ns - s.self_mean) / nullif(s.self_sd, 0), 0) END AS score
    FROM cand c LEFT JOIN stats s USING (trace_id, device)
),
{%- if limit %}
-- the top `limit` candidates by score and the top `limit` other ops by idle time
-- per trace and device (heap-based arg_max(.., n): no sort of every op)
top_lists AS (
    SELECT trace_id, device,
           arg_max(event_id, (score, -ts_ns, -event_id), $limit) FILTER (WHERE candidate) AS cands,
           arg_max(event_id, (gpu_idle_ns, -ts_ns, -event_id), $limit) FILTER (WHERE NOT candidate) AS others
    FROM scored
    GROUP BY trace_id, device
),
picked AS (
    SELECT trace_id, device, unnest(cands) AS event_id, generate_subscripts(cands, 1) AS idle_rank FROM top_lists
    UNION ALL
    SELECT trace_id, device, unnest(others) AS event_id, NULL AS idle_rank FROM top_lists
),
top_ops AS (
    SELECT p.idle_rank, o.*
    FROM picked p JOIN scored o USING (trace_id, device, event_id)
    QUALIFY row_number() OVER (PARTITION BY o.trace_id, o.device
                               ORDER BY p.idle_rank NULLS LAST, o.gpu_idle_ns DESC, o.ts_ns, o.event_id) <= $limit
),
{%- else %}
top_ops AS (
    SELECT *,
           CASE WHEN candidate THEN row_number() OVER (PARTITION BY trace_id, device, candidate
                                                       ORDER BY score DESC, ts_ns, event_id) END AS idle_rank
    FROM scored
),
{%- endif %}
top AS (  -- names and threads for the rows shown only
    SELECT t.*, e.name, e.pid, e.tid
    FROM top_ops t JOIN cpu_ops e ON e.trace_id = t.trace_id AND e.event_id = t.event_id
),
src AS (  -- the user's frame around each op shown
    {{ user_frame('top', ['trace_id', 'device', 'event_id']) | indent(4) }}
)
SELECT tr.run, tr.rank, t.trace_id, t.device, t.idle_rank, t.name AS op, t.event_id,
       (t.ts_ns - tr.first_ts_ns) / 1e6 AS ts_ms,
       t.dur_ns / 1e3 AS dur_us, t.self_ns / 1e3 AS self_us, t.gpu_idle_ns / 1e3 AS gpu_idle_us,
       100.0 * t.idle_frac AS idle_pct, t.score, s.source
FROM top t
JOIN trace_files tr USING (trace_id)
LEFT JOIN src s USING (trace_id, device, event_id)
ORDER BY tr.run, tr.rank NULLS LAST, t.trace_id, t.device, t.idle_rank NULLS LAST, t.gpu_idle_ns DESC,
         t.ts_ns, t.event_id

-- @notes
{{ gpu_notes(need_launches=true, unlaunched=true) }}
