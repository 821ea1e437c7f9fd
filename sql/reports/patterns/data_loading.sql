-- data-loading: steps that spend more than --data-loading-pct % of their time
-- waiting for the next batch from the DataLoader.
--
-- Why it matters: while the loop waits for a batch the GPU has nothing
-- queued; with workers the wait is what loading could not hide.
-- How to fix: more DataLoader workers (num_workers), prefetch_factor,
-- persistent_workers=True; a faster dataset (decode once, cache, lighter
-- transforms or transforms on the GPU); with a GPU, pin_memory=True (pinned
-- batches copy to the device faster, and asynchronously). A trace without a
-- GPU (no GPU activity, no deviceProperties) gets no pin_memory or GPU advice
-- (fix-no-gpu): pinning only speeds up host-to-device copies.
-- The trace must contain: ProfilerStep#N annotations and the
-- enumerate(DataLoader)#...__next__ annotations torch records around every
-- batch it yields.
--
-- Matching: per step, the __next__ annotations (single- or multi-process
-- iterator) that start in the step's host window; the step matches when their
-- total duration is at least --data-loading-pct % of the step's.
-- Time at stake: that total, per matching step.
--
-- severity: medium
-- fix: more DataLoader workers, prefetch_factor, persistent_workers=True, pin_memory=True, or a faster dataset
-- fix-no-gpu: more DataLoader workers, prefetch_factor, persistent_workers=True, or a faster dataset
-- method: the time in DataLoader __next__ inside the matching steps
-- needs: steps, enumerate(DataLoader) annotations
-- option: --data-loading-pct DOUBLE >= 0 = 10  data-loading: share of a step spent in DataLoader __next__, %
-- requires: host_events, steps, trace_files
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the step's first __next__ annotation
-- name         VARCHAR  its name
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   the step's time in __next__, ns
-- detail       VARCHAR  e.g. 'step 3: 38% of the step loading data'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   the annotation when it is a cpu_op (traces of 2021), else NULL
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import annotations, skipped_unless with context %}
WITH nexts AS (
    SELECT n.*, s.step, s.dur_ns AS step_ns
    FROM ({{ annotations(['enumerate(DataLoader)#%.__next__']) | indent(10) }}) n
    ASOF JOIN steps s ON s.trace_id = n.trace_id AND n.ts_ns >= s.ts_ns
    WHERE n.ts_ns < s.end_ns
),
per_step AS (
    SELECT trace_id, step, any_value(step_ns) AS step_ns, sum(dur_ns)::BIGINT AS loading_ns,
           arg_min(event_id, ts_ns) AS event_id
    FROM nexts GROUP BY trace_id, step
    HAVING 100.0 * sum(dur_ns) / nullif(any_value(step_ns), 0) >= $data_loading_pct
)
SELECT n.trace_id, n.event_id, n.name, n.ts_ns, n.dur_ns, p.loading_ns AS at_stake_ns,
       'step ' || p.step || ': ' || round(100.0 * p.loading_ns / p.step_ns)::INTEGER || '% of the step in __next__'
           AS detail,
       n.pid, n.tid, n.ts_ns AS host_ts_ns, CASE WHEN n.is_op THEN n.event_id END AS op_event_id
FROM per_step p
JOIN nexts n ON n.trace_id = p.trace_id AND n.event_id = p.event_id

-- @skipped
{{ skipped_unless(['steps']) }}
UNION ALL
SELECT f.trace_id, 'no enumerate(DataLoader)#...__next__ annotation: data loading is not marked in this trace'
FROM trace_files f
WHERE NOT EXISTS (SELECT 1 FROM ({{ annotations(['enumerate(DataLoader)#%']) }}) a WHERE a.trace_id = f.trace_id)
  {{ run_scope('f.') }}
