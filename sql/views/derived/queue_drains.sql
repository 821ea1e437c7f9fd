-- queue_drains: the intervals in which a device's queue drains from a peak of
-- at least 4 down to 0: torch.profiler._utils.BasicEvaluation.rank_events'
-- "decrease intervals", on the per-device series queue_depth(per_device := true).
-- CPU ops that overlap one are the candidates of `duckprof report idle --by event`.
--
-- BasicEvaluation's walk, reproduced without a loop: going backwards from each
-- change point where the depth is 0 (an anchor), it takes the nearest earlier
-- stretch between two zeros whose maximum is >= 4 (stretches with a lower
-- maximum are passed over, so the interval can span several zeros); the
-- interval runs from that stretch's peak (its latest point at the maximum) to
-- the anchor. The walk then resumes at the zero before the one that opens the
-- peak's stretch. So, numbering the stretches by the zeros before them, a run
-- of consecutive peaked stretches hi, hi-1, ..., lo yields hi, hi-2, ... .
-- (When the walk picks the stretch before the first zero, BasicEvaluation goes
-- on to add intervals nested in that one; they change no overlap, so they are
-- not listed.)
-- It is computed per busy period of the queue (the depth is 0 only where one
-- period ends), which equals the series except for an event whose launch call
-- starts after the event ended (clock skew: none in the corpus).
-- Differences from BasicEvaluation: see queue_depth (what the depth counts).
--
-- Also a table macro of the same name,
-- queue_drains(exclude_last_step := false, hta := false) (see gpu_activity).
--
-- requires: gpu_activity
--
-- Columns:
-- trace_id    INTEGER  trace
-- device      INTEGER  GPU index
-- start_ns    BIGINT   time of the peak, ns since the epoch
-- end_ns      BIGINT   time the queue is empty again (the anchor)
-- dur_ns      BIGINT   end_ns - start_ns
-- peak_depth  BIGINT   queue depth at the peak (>= 4)
CREATE OR REPLACE MACRO queue_drains(exclude_last_step := false, hta := false) AS TABLE
WITH a AS (
    SELECT trace_id, device, event_id, launch_ts_ns, ts_ns, end_ns
    FROM gpu_activity(exclude_last_step := exclude_last_step, hta := hta)
    WHERE launch_ts_ns IS NOT NULL
),
-- Busy periods of the queue: in launch order, an event whose launch call starts
-- when every earlier-launched event has ended (>=: at equal times ends come
-- first, so the depth touches 0) opens a new period. Period g holds stretch
-- g - 1 and ends with zero number g (its last end).
opened AS (
    SELECT *, coalesce(launch_ts_ns >= max(end_ns) OVER (PARTITION BY trace_id, device
                                                         ORDER BY launch_ts_ns, event_id
                                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                       true) AS opens
    FROM a
),
periods AS (
    SELECT *, sum(opens::INTEGER) OVER (PARTITION BY trace_id, device ORDER BY launch_ts_ns, event_id
                                        ROWS UNBOUNDED PRECEDING) AS period
    FROM opened
),
-- the queue_depth(per_device := true) series, period by period
changes AS (  -- launch, start and end of each event (one read of periods, not three)
    SELECT trace_id, device, period, event_id, unnest([launch_ts_ns, ts_ns, end_ns]) AS ts_ns,
           unnest([2, 1, 0]) AS ord, unnest([1, 0, -1]) AS d
    FROM periods
),
series AS (  -- the depth after each change: every period ends at depth 0, so the running sum
             -- over the device in (period, time) order equals the sum within the period
    SELECT trace_id, device, period, ts_ns, ord, event_id,
           sum(d) OVER (PARTITION BY trace_id, device ORDER BY period, ts_ns, ord, event_id
                        ROWS UNBOUNDED PRECEDING) AS queue_depth
    FROM changes
),
stretches AS (  -- the peak: the last change (in time order) at the highest depth of the period
    SELECT trace_id, device, period - 1 AS c, max(ts_ns) AS zero_ts_ns,
           max(queue_depth) AS peak, arg_max(ts_ns, (queue_depth, ts_ns)) AS peak_ts_ns
    FROM series
    GROUP BY trace_id, device, period
),
zero_count AS (
    SELECT trace_id, device, max(c) + 1 AS m FROM stretches GROUP BY trace_id, device
),
zeros AS (
    SELECT trace_id, device, c + 1 AS zero_no, zero_ts_ns AS ts_ns FROM stretches
),
peaks AS (  -- stretches with a peak >= 4 (each is closed by its zero)
    SELECT trace_id, device, c, peak, peak_ts_ns FROM stretches WHERE peak >= 4
),
peak_runs AS (  -- maximal runs of consecutive stretch numbers
    SELECT *, c - row_number() OVER (PARTITION BY trace_id, device ORDER BY c) AS run_key
    FROM peaks
),
run_bounds AS (
    SELECT trace_id, device, run_key, min(c) AS lo, max(c) AS hi,
           min(c) + (max(c) - min(c)) % 2 AS lowest_pick
    FROM peak_runs GROUP BY trace_id, device, run_key
),
run_anchor AS (  -- the zero the walk comes from when it reaches the top of each run
    SELECT r.*, coalesce(lead(r.lowest_pick) OVER (PARTITION BY r.trace_id, r.device ORDER BY r.hi) - 1,
                         z.m) AS top_anchor
    FROM run_bounds r JOIN zero_count z USING (trace_id, device)
)
SELECT p.trace_id, p.device, p.peak_ts_ns AS start_ns, z.ts_ns AS end_ns, z.ts_ns - p.peak_ts_ns AS dur_ns,
       p.peak::BIGINT AS peak_depth
FROM peak_runs p
JOIN run_anchor a USING (trace_id, device, run_key)
JOIN zeros z ON z.trace_id = p.trace_id AND z.device = p.device
            AND z.zero_no = CASE WHEN p.c = a.hi THEN a.top_anchor ELSE p.c + 1 END
WHERE (a.hi - p.c) % 2 = 0;

CREATE OR REPLACE VIEW queue_drains AS SELECT * FROM queue_drains();
