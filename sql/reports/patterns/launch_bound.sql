-- launch-bound: streams whose kernels mostly run for less time than their
-- launch call takes on the host: the GPU waits for the CPU to issue work.
--
-- Why it matters: when kernels are shorter than the launch overhead, adding
-- GPU speed changes nothing; the host's per-kernel cost sets the pace and the
-- GPU idles between kernels.
-- How to fix: fewer, bigger kernels: torch.compile (fusion; mode="reduce-overhead"
-- adds CUDA graphs), CUDA graphs (torch.cuda.graphs), foreach/fused
-- optimizers, larger batches.
-- The trace must contain: GPU kernels and the runtime calls that launched
-- them (correlation).
--
-- Matching: per trace, device and stream, the kernels whose duration is
-- shorter than their launch call's (gpu_activity.launch_event_id); the stream
-- matches when they are at least --launch-bound-pct % of its kernels and at
-- least --launch-bound-min kernels; each such short kernel is a match.
-- Time at stake: for each short kernel, its launch call's duration minus its
-- own: how long the GPU waits for the next kernel when the host issues them
-- back to back.
--
-- severity: medium
-- fix: fewer, bigger kernels: torch.compile (mode="reduce-overhead" for CUDA graphs), CUDA graphs, fused/foreach ops
-- method: per short kernel, its launch call's duration minus its own
-- needs: gpu, kernels
-- option: --launch-bound-pct DOUBLE >= 0 = 50  launch-bound: % of a stream's kernels shorter than their launch
-- option: --launch-bound-min INTEGER >= 1 = 100  launch-bound: fewest such kernels on the stream
-- shared: launched
-- requires: gpu_activity, host_events, trace_files, kernels
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the kernel
-- name         VARCHAR  kernel name
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   launch call duration - kernel duration, ns
-- detail       VARCHAR  e.g. 'stream 7: 812 of 1,024 kernels shorter than their launch'
-- pid          BIGINT   host process of the launch call
-- tid          BIGINT   its thread
-- host_ts_ns   BIGINT   when the launch call started
-- op_event_id  BIGINT   the host event around the launch call (its op)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import skipped_unless, launch_calls with context %}
WITH k AS (
    SELECT a.trace_id, a.event_id, a.name, a.device, a.stream, a.ts_ns, a.dur_ns, a.call_dur_ns AS launch_dur_ns,
           a.call_ts_ns AS launch_ts_ns, a.call_pid AS pid, a.call_tid AS tid, a.call_parent_event_id AS op_event_id,
           a.dur_ns < a.call_dur_ns AS short
    FROM ({{ launch_calls("(SELECT * FROM gpu_activity WHERE kind = 'kernel' " ~ run_scope() ~ ")") | indent(10) }}) a
    WHERE a.call_event_id IS NOT NULL
),
streams AS (
    SELECT trace_id, device, stream, count(*) AS kernels, count(*) FILTER (WHERE short) AS shorts
    FROM k GROUP BY ALL
    HAVING count(*) FILTER (WHERE short) >= $launch_bound_min
       AND 100.0 * count(*) FILTER (WHERE short) / count(*) >= $launch_bound_pct
)
SELECT k.trace_id, k.event_id, k.name, k.ts_ns, k.dur_ns, k.launch_dur_ns - k.dur_ns AS at_stake_ns,
       'stream ' || k.stream || ': ' || s.shorts || ' of ' || s.kernels || ' kernels shorter than their launch' AS detail,
       k.pid, k.tid, k.launch_ts_ns AS host_ts_ns, k.op_event_id
FROM k
JOIN streams s ON s.trace_id = k.trace_id AND s.device IS NOT DISTINCT FROM k.device
              AND s.stream IS NOT DISTINCT FROM k.stream
WHERE k.short

-- @skipped
{{ skipped_unless(['kernels']) }}
