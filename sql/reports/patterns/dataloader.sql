-- dataloader: a DataLoader with num_workers=0: batches are loaded on the
-- training loop's own thread, between the steps, while the GPU waits.
--
-- Why it matters: loading and collating a batch stops the loop; worker
-- processes would prepare the next batches while this one trains.
-- How to fix: DataLoader(..., num_workers=N, pin_memory=True,
-- persistent_workers=True), N about the CPU cores per GPU. A trace without a
-- GPU (no GPU activity, no deviceProperties) gets the advice without
-- pin_memory (fix-no-gpu), which only speeds up host-to-device copies.
-- The trace must contain: Python stacks (with_stack=True) that hold the
-- DataLoader's __iter__, or the enumerate(DataLoader)#...__next__
-- annotations torch records around every batch.
--
-- Matching is torch's SynchronizedDataLoaderPattern with stacks: a frame
-- torch/utils/data/dataloader.py(N): __iter__ whose first child is
-- dataloader.py(N): _get_iterator, whose first child is not
-- dataloader.py(N): check_worker_number_rationality (the call only the
-- multi-process iterator makes). Difference: frames whose path ends in
-- /torch/utils/data/dataloader.py (absolute paths, as older traces write them)
-- count too. Without a matching __iter__ (no stacks, or the iterator was made
-- before profiling began), each enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__
-- annotation is a match of its own.
-- Time at stake: the batches loaded on the loop's thread: the durations of
-- the _SingleProcessDataLoaderIter.__next__ annotations (each counted with the
-- last matching __iter__ before it on its thread). Worker processes would
-- overlap most of it with compute.
--
-- severity: medium
-- fix: DataLoader(..., num_workers=N, pin_memory=True, persistent_workers=True)
-- fix-no-gpu: DataLoader(..., num_workers=N, persistent_workers=True)
-- method: the duration of the single-process __next__ calls (the loading done on the loop's thread)
-- needs: stacks or enumerate(DataLoader) annotations
-- torch: SynchronizedDataLoaderPattern
-- requires: host_events, trace_files
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the __iter__ frame, or the __next__ annotation
-- name         VARCHAR  its name
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   the single-process __next__ time it accounts for, ns (NULL: none in the trace)
-- detail       VARCHAR  e.g. '6 batches loaded on the loop thread'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   the annotation when it is a cpu_op (traces of 2021), else NULL
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import annotations, has_stacks with context %}
{%- macro loader_frame(col, function) -%}
(regexp_matches({{ col }}, '(^|/)torch/utils/data/dataloader\.py') AND ends_with({{ col }}, '{{ function }}'))
{%- endmacro %}
WITH iters AS (
    SELECT * FROM host_events h
    WHERE h.cat = 'python_function' AND {{ loader_frame('h.name', '__iter__') }} {{ run_scope('h.') }}
),
firsts AS (  -- the first child of each __iter__
    SELECT t.trace_id, t.parent_event_id, arg_min(t.event_id, (t.ts_ns, t.event_id)) AS first_id
    FROM host_events t SEMI JOIN iters i ON i.trace_id = t.trace_id AND i.event_id = t.parent_event_id
    GROUP BY t.trace_id, t.parent_event_id
),
getters AS (  -- ... is _get_iterator
    SELECT i.*, g.event_id AS getter_id
    FROM iters i
    JOIN firsts f ON f.trace_id = i.trace_id AND f.parent_event_id = i.event_id
    JOIN host_events g ON g.trace_id = i.trace_id AND g.event_id = f.first_id
    WHERE {{ loader_frame('g.name', '_get_iterator') }}
),
seconds AS (  -- the first child of that
    SELECT t.trace_id, t.parent_event_id, arg_min(t.event_id, (t.ts_ns, t.event_id)) AS first_id
    FROM host_events t SEMI JOIN getters g ON g.trace_id = t.trace_id AND g.getter_id = t.parent_event_id
    GROUP BY t.trace_id, t.parent_event_id
),
sync_iters AS (  -- ... is not check_worker_number_rationality
    SELECT g.*
    FROM getters g
    JOIN seconds s ON s.trace_id = g.trace_id AND s.parent_event_id = g.getter_id
    JOIN host_events c ON c.trace_id = g.trace_id AND c.event_id = s.first_id
    WHERE NOT {{ loader_frame('c.name', 'check_worker_number_rationality') }}
),
nexts AS (  -- batches loaded on the loop's thread, each with the last matching __iter__ before it
    SELECT n.*, i.event_id AS iter_id
    FROM ({{ annotations(['enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__']) | indent(10) }}) n
    ASOF LEFT JOIN sync_iters i ON i.trace_id = n.trace_id AND i.pid = n.pid AND i.tid = n.tid AND n.ts_ns >= i.ts_ns
)
SELECT i.trace_id, i.event_id, i.name, i.ts_ns, i.dur_ns, sum(n.dur_ns)::BIGINT AS at_stake_ns,
       count(n.event_id) || ' batches loaded on the loop thread' AS detail,
       i.pid, i.tid, i.ts_ns AS host_ts_ns, NULL::BIGINT AS op_event_id
FROM sync_iters i
LEFT JOIN nexts n ON n.trace_id = i.trace_id AND n.iter_id = i.event_id
GROUP BY ALL
UNION ALL
SELECT trace_id, event_id, name, ts_ns, dur_ns, dur_ns, 'a batch loaded on the loop thread', pid, tid, ts_ns,
       CASE WHEN is_op THEN event_id END
FROM nexts
WHERE iter_id IS NULL

-- @skipped
SELECT f.trace_id, 'no Python stacks (record with with_stack=True) and no enumerate(DataLoader) annotation' AS reason
FROM trace_files f
WHERE NOT {{ has_stacks('f') }}
  AND NOT EXISTS (SELECT 1 FROM ({{ annotations(['enumerate(DataLoader)#%']) }}) a WHERE a.trace_id = f.trace_id)
  {{ run_scope('f.') }}
