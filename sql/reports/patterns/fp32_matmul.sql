-- fp32-matmul: fp32 matrix multiplies on a GPU that has TF32 (NVIDIA compute
-- capability 8.0 or more) running full-fp32 kernels.
--
-- Why it matters: on Ampere and later, TF32 tensor cores run fp32 matmuls
-- several times faster (A100: 156 vs 19.5 TFLOP/s) with a 10-bit mantissa,
-- enough for most training.
-- How to fix: torch.backends.cuda.matmul.allow_tf32 = True, or
-- torch.set_float32_matmul_precision("high").
-- The trace must contain: deviceProperties with the GPU's compute capability,
-- GPU kernels linked to their ops, input types (record_shapes=True).
--
-- Matching: aten::mm, addmm, bmm, baddbmm, addbmm or _addmm_activation with an
-- fp32 ('float') first input, on a device with compute capability >= 8.0 that
-- is not an AMD GPU, with a kernel whose name says nothing of TF32 (tf32,
-- tfloat32, xf32, s1688, s16816: the names of cuBLAS / CUTLASS TF32 kernels).
-- Difference from torch: FP32MatMulPattern reads the op's allow_tf32 flag,
-- which the trace does not keep, and matches aten::mm only; it decides whether
-- the GPU has TF32 from the machine it runs on (torch.cuda.get_arch_list()),
-- and on a build without CUDA that list is empty and all() of it true, so it
-- matches every aten::mm of a CPU-only trace. This rule reads the trace's own
-- devices and never runs on a trace without such a GPU (listed as skipped).
-- Time at stake: each kernel's duration times 1 - fp32 peak / tf32 peak of
-- its device (trace_devices; A100: 87.5%); NULL when a peak is unknown.
--
-- severity: medium
-- fix: torch.backends.cuda.matmul.allow_tf32 = True (or torch.set_float32_matmul_precision("high"))
-- method: the fp32 kernels' time times 1 - fp32 peak / tf32 peak of the device
-- needs: gpu, shapes, deviceProperties (compute capability)
-- torch: FP32MatMulPattern
-- shared: matmuls
-- requires: host_events, runtime, gpu_ops, trace_devices, trace_files, cpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the matmul op
-- name         VARCHAR  its name
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   its fp32 kernels' time * (1 - fp32 peak / tf32 peak), ns
-- detail       VARCHAR  the first fp32 kernel's name
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   = event_id
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import skipped_unless, matmuls with context %}
{%- macro tf32_name(col) -%}
regexp_matches({{ col }}, 'tf32|tfloat32|xf32|s1688|s16816', 'i')
{%- endmacro %}
{%- macro tf32_capable(d) -%}
({{ d }}.compute_major >= 8 AND NOT regexp_matches(coalesce({{ d }}.device_name, ''), 'AMD|Radeon|Instinct', 'i'))
{%- endmacro %}
WITH capable AS (  -- traces with a TF32 GPU
    SELECT DISTINCT d.trace_id FROM trace_devices d WHERE {{ tf32_capable('d') }} {{ run_scope('d.') }}
),
mms AS (
    SELECT o.trace_id, o.event_id, o.name, o.pid, o.tid, o.ts_ns, o.dur_ns
    FROM ({{ matmuls() | indent(10) }}) o SEMI JOIN capable c USING (trace_id)
    WHERE starts_with(o.input_types::VARCHAR, '["float"') AND o.input_types->>0 = 'float'
),
op_kernels AS (  -- the kernels launched on a TF32 GPU by the calls right under those ops
    SELECT DISTINCT r.trace_id, r.parent_event_id AS event_id, g.event_id AS kernel_id, g.name, g.ts_ns, g.dur_ns,
           g.dur_ns * (1 - d.fp32_tflops / d.tf32_tflops) AS stake_ns
    FROM runtime r
    SEMI JOIN mms m ON m.trace_id = r.trace_id AND m.event_id = r.parent_event_id
    JOIN gpu_ops g ON g.trace_id = r.trace_id AND g.correlation = r.correlation
    JOIN trace_devices d ON d.trace_id = g.trace_id AND d.device = g.device AND {{ tf32_capable('d') }}
    WHERE g.kind = 'kernel' AND g.dur_ns IS NOT NULL
)
-- (the name test is an aggregate filter: run on these kernels only, not on every kernel of the trace)
SELECT m.trace_id, m.event_id, m.name, m.ts_ns, m.dur_ns,
       round(sum(k.stake_ns) FILTER (WHERE NOT {{ tf32_name('k.name') }}))::BIGINT AS at_stake_ns,
       arg_min(k.name, k.ts_ns) FILTER (WHERE NOT {{ tf32_name('k.name') }}) AS detail,
       m.pid, m.tid, m.ts_ns AS host_ts_ns, m.event_id AS op_event_id
FROM mms m
JOIN op_kernels k USING (trace_id, event_id)
GROUP BY ALL
HAVING count(*) FILTER (WHERE NOT {{ tf32_name('k.name') }}) > 0

-- @skipped
SELECT f.trace_id, 'no GPU with TF32 in deviceProperties (NVIDIA, compute capability >= 8.0)' AS reason
FROM trace_files f
WHERE NOT EXISTS (SELECT 1 FROM trace_devices d WHERE d.trace_id = f.trace_id AND {{ tf32_capable('d') }})
  {{ run_scope('f.') }}
UNION ALL
{{ skipped_unless(['shapes']) }}
