-- idle: which CPU ops leave the GPU idle, ranked like torch.profiler._utils.
-- BasicEvaluation (rank_events / get_optimizable_events), per trace and device.
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
-- event of the profiler tree; we rank cpu_ops. Its interval overlap helper can
-- skip an interval after a nested one; we take the exact overlap.
--
-- source is BasicEvaluation's source_code_location: the innermost enclosing
-- python_function on the op's thread whose name looks like 'file.py(line): func'
-- (only in traces recorded with with_stack=True).
--
-- Parameters: exclude_last_step, round_to_us (BOOLEAN, see gpu_activity),
-- run (when by_run), device (when by_device), limit (when limited: rows per trace and device).
--
-- run            VARCHAR  run label
-- rank           INTEGER  rank of the trace
-- trace_id       INTEGER  trace
-- device         INTEGER  GPU index
-- idle_rank      BIGINT   1, 2, ... for the candidates (highest score first); NULL otherwise
-- op             VARCHAR  cpu_ops.name
-- event_id       BIGINT   cpu_ops.event_id
-- ts_ms          DOUBLE   op start, ms after the trace's first complete (ph X) event
-- dur_us         DOUBLE   op duration, µs
-- self_us        DOUBLE   op self time, µs
-- gpu_idle_us    DOUBLE   GPU idle time during the op, µs
-- idle_pct       DOUBLE   gpu_idle_us / dur_us, %
-- score          DOUBLE   z(idle fraction) + 0.6 * z(self time); NULL when not a candidate
-- source         VARCHAR  e.g. 'train.py(82): step'; NULL when the trace has no Python stacks
{%- macro scope() -%}
{%- if by_run %} AND trace_id IN (SELECT trace_id FROM traces WHERE run = $run){% endif -%}
{%- if by_device %} AND device = $device{% endif -%}
{%- endmacro %}
WITH act AS (  -- every device event with a launch call: queued from the call's start to its end
    SELECT trace_id, device, launch_ts_ns AS s, greatest(end_ns, launch_ts_ns) AS e
    FROM gpu_activity(exclude_last_step := $exclude_last_step, round_to_us := $round_to_us)
    WHERE launch_ts_ns IS NOT NULL {{ scope() }}
),
-- the device queue is non-empty exactly on the union of those intervals
-- (running-max merge); GPU idle time is everything else
act_flagged AS (
    SELECT *, coalesce(s > max(e) OVER (PARTITION BY trace_id, device ORDER BY s, e
                                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true) AS opens
    FROM act
),
queued AS (
    SELECT trace_id, device, min(s) AS start_ns, max(e) AS end_ns
    FROM (SELECT *, sum(opens::INTEGER) OVER (PARTITION BY trace_id, device ORDER BY s, e
                                              ROWS UNBOUNDED PRECEDING) AS grp FROM act_flagged)
    GROUP BY trace_id, device, grp
),
falling AS (
    SELECT trace_id, device, start_ns, end_ns
    FROM queue_drains(exclude_last_step := $exclude_last_step, round_to_us := $round_to_us)
    WHERE TRUE {{ scope() }}
),
-- one step function per device over the breakpoints of both interval sets:
-- queued_on / falling_on say what holds from a breakpoint to the next, and
-- idle_before / falling_before accumulate from the first breakpoint
bp AS (
    SELECT trace_id, device, t, sum(d_queued) AS d_queued, sum(d_falling) AS d_falling
    FROM (SELECT trace_id, device, start_ns AS t, 1 AS d_queued, 0 AS d_falling FROM queued
          UNION ALL SELECT trace_id, device, end_ns, -1, 0 FROM queued
          UNION ALL SELECT trace_id, device, start_ns, 0, 1 FROM falling
          UNION ALL SELECT trace_id, device, end_ns, 0, -1 FROM falling)
    GROUP BY trace_id, device, t
),
bp_state AS (
    SELECT trace_id, device, t,
           sum(d_queued) OVER w AS queued_on, sum(d_falling) OVER w AS falling_on,
           lead(t) OVER (PARTITION BY trace_id, device ORDER BY t) - t AS span_ns,
           min(t) OVER (PARTITION BY trace_id, device) AS first_t
    FROM bp
    WINDOW w AS (PARTITION BY trace_id, device ORDER BY t ROWS UNBOUNDED PRECEDING)
),
bp_cum AS (
    SELECT trace_id, device, t, first_t, queued_on, falling_on,
           coalesce(sum(CASE WHEN queued_on <= 0 THEN span_ns ELSE 0 END) OVER w, 0) AS idle_before,
           coalesce(sum(CASE WHEN falling_on > 0 THEN span_ns ELSE 0 END) OVER w, 0) AS falling_before
    FROM bp_state
    WINDOW w AS (PARTITION BY trace_id, device ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
devs AS (
    SELECT DISTINCT trace_id, device, first_t FROM bp_cum
),
ops AS (
    SELECT o.trace_id, d.device, d.first_t, o.event_id, o.ts_ns, o.end_ns, o.dur_ns, o.self_ns
    FROM cpu_ops o JOIN devs d USING (trace_id)
),
looked AS (
    SELECT o.*,
           cs.t AS s_t, cs.queued_on AS s_queued, cs.falling_on AS s_falling,
           cs.idle_before AS s_idle, cs.falling_before AS s_fall,
           ce.t AS e_t, ce.queued_on AS e_queued, ce.falling_on AS e_falling,
           ce.idle_before AS e_idle, ce.falling_before AS e_fall
    FROM ops o
    ASOF LEFT JOIN bp_cum cs ON cs.trace_id = o.trace_id AND cs.device = o.device AND o.ts_ns >= cs.t
    ASOF LEFT JOIN bp_cum ce ON ce.trace_id = o.trace_id AND ce.device = o.device AND o.end_ns >= ce.t
),
measured AS (
    -- I(t) = idle time up to t (all time before the first breakpoint is idle),
    -- F(t) = time inside drain intervals up to t; an op gets I(end) - I(start)
    -- and is a candidate when F(end) - F(start) > 0
    SELECT trace_id, device, event_id, ts_ns, end_ns, dur_ns, self_ns,
           (CASE WHEN e_t IS NULL THEN end_ns - first_t
                 ELSE e_idle + CASE WHEN e_queued <= 0 THEN end_ns - e_t ELSE 0 END END)
         - (CASE WHEN s_t IS NULL THEN ts_ns - first_t
                 ELSE s_idle + CASE WHEN s_queued <= 0 THEN ts_ns - s_t ELSE 0 END END) AS gpu_idle_ns,
           coalesce(e_fall + CASE WHEN e_falling > 0 THEN end_ns - e_t ELSE 0 END, 0)
         - coalesce(s_fall + CASE WHEN s_falling > 0 THEN ts_ns - s_t ELSE 0 END, 0) AS falling_ns
    FROM looked
),
cand AS (
    SELECT *, coalesce(gpu_idle_ns / nullif(dur_ns, 0), 0) AS idle_frac, falling_ns > 0 AS candidate
    FROM measured
),
stats AS (
    SELECT trace_id, device,
           avg(idle_frac) AS idle_mean, stddev_samp(idle_frac) AS idle_sd,
           avg(self_ns) AS self_mean, stddev_samp(self_ns) AS self_sd
    FROM cand WHERE candidate
    GROUP BY trace_id, device
),
scored AS (
    SELECT c.*,
           CASE WHEN c.candidate THEN
               coalesce((c.idle_frac - s.idle_mean) / nullif(s.idle_sd, 0), 0)
             + 0.6 * coalesce((c.self_ns - s.self_mean) / nullif(s.self_sd, 0), 0) END AS score
    FROM cand c LEFT JOIN stats s USING (trace_id, device)
),
{%- if limited %}
-- the top `limit` candidates by score and the top `limit` other ops by idle time
-- per trace and device (heap-based arg_max(.., n): no sort of every op)
top_lists AS (
    SELECT trace_id, device,
           arg_max(struct_pack(event_id, ts_ns, end_ns, dur_ns, self_ns, gpu_idle_ns,
                               idle_frac, score), (score, -ts_ns, -event_id), $limit)
               FILTER (WHERE candidate) AS cands,
           arg_max(struct_pack(event_id, ts_ns, end_ns, dur_ns, self_ns, gpu_idle_ns,
                               idle_frac, score), (gpu_idle_ns, -ts_ns, -event_id), $limit)
               FILTER (WHERE NOT candidate) AS others
    FROM scored
    GROUP BY trace_id, device
),
picked AS (
    SELECT trace_id, device, unnest(cands) AS o, generate_subscripts(cands, 1) AS idle_rank FROM top_lists
    UNION ALL
    SELECT trace_id, device, unnest(others) AS o, NULL AS idle_rank FROM top_lists
),
top_ops AS (
    SELECT trace_id, device, idle_rank, unnest(o)
    FROM picked
    QUALIFY row_number() OVER (PARTITION BY trace_id, device
                               ORDER BY idle_rank NULLS LAST, o.gpu_idle_ns DESC, o.ts_ns, o.event_id) <= $limit
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
    FROM top_ops t JOIN events e ON e.trace_id = t.trace_id AND e.event_id = t.event_id
),
src AS (  -- innermost enclosing 'file.py(N): f' python_function on the op's thread
    SELECT t.trace_id, t.device, t.event_id, arg_max(p.name, (p.ts_ns, p.depth)) AS source
    FROM top t
    JOIN python_functions p
      ON p.trace_id = t.trace_id AND p.pid = t.pid AND p.tid = t.tid
     AND p.ts_ns <= t.ts_ns AND p.end_ns >= t.end_ns
    WHERE regexp_matches(p.name, '\.py\(.*\)')
    GROUP BY t.trace_id, t.device, t.event_id
),
trace_start AS (
    SELECT trace_id, min(ts_ns) AS t0 FROM events
    WHERE ph = 'X' AND trace_id IN (SELECT trace_id FROM top) GROUP BY trace_id
)
SELECT tr.run, tr.rank, t.trace_id, t.device, t.idle_rank, t.name AS op, t.event_id,
       (t.ts_ns - ts.t0) / 1e6 AS ts_ms,
       t.dur_ns / 1e3 AS dur_us, t.self_ns / 1e3 AS self_us, t.gpu_idle_ns / 1e3 AS gpu_idle_us,
       100.0 * t.idle_frac AS idle_pct, t.score, s.source
FROM top t
JOIN traces tr USING (trace_id)
JOIN trace_start ts USING (trace_id)
LEFT JOIN src s USING (trace_id, device, event_id)
ORDER BY tr.run, tr.rank NULLS LAST, t.trace_id, t.device, t.idle_rank NULLS LAST, t.gpu_idle_ns DESC,
         t.ts_ns, t.event_id
