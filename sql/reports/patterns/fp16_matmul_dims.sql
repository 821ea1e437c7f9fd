-- fp16-matmul-dims: a bf16 or fp16 matrix multiply with a dimension that is
-- not a multiple of 8.
--
-- Why it matters: tensor cores work on tiles whose sides are multiples of 8
-- (16 bytes of fp16/bf16); other shapes fall back to padded or slower kernels.
-- How to fix: pad the dimensions to multiples of 8 (vocabulary, hidden and
-- batch sizes), e.g. round the vocabulary up to a multiple of 64.
-- The trace must contain: CPU operators with their input shapes and types
-- (record_shapes=True), and GPU activity: tensor cores are a GPU's, so on a
-- host-only trace (a CPU job's bf16 autocast) the advice cannot apply and the
-- rule is skipped.
--
-- Matching is torch's MatMulDimInFP16Pattern: aten::mm, aten::bmm or
-- aten::addmm whose first input is bf16 or fp16 (c10::BFloat16, c10::Half)
-- and whose inputs have a dimension, among the last two of each, that is not
-- a multiple of 8. Differences from torch: torch also requires Python stacks
-- (with_stack=True); this rule does not. torch matches a CPU-only trace's
-- matmuls too; this rule needs GPU activity in the trace.
-- Time at stake: the GPU time of the op's kernels (launched from inside it): the time spent
-- on the misaligned shape, an upper bound of what padding saves; NULL on a
-- host-only trace.
--
-- severity: low
-- fix: pad matmul dimensions to multiples of 8 (16 bytes) so tensor cores apply
-- method: the GPU time of the matched ops' kernels (upper bound)
-- needs: shapes, gpu
-- torch: MatMulDimInFP16Pattern
-- shared: matmuls
-- requires: host_events, runtime, gpu_ops, trace_files, cpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the matmul op
-- name         VARCHAR  'aten::mm', 'aten::bmm' or 'aten::addmm'
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   its kernels' time, ns (NULL: no kernel)
-- detail       VARCHAR  dtype and shapes, e.g. 'c10::BFloat16 [[30,17],[17,9]]'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   = event_id
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import skipped_unless, matmuls with context %}
WITH mms AS (
    SELECT o.trace_id, o.event_id, o.name, o.pid, o.tid, o.ts_ns, o.dur_ns, o.input_types->>0 AS dtype,
           o.input_dims, try_cast(o.input_dims AS BIGINT[][]) AS dims
    FROM ({{ matmuls() | indent(10) }}) o
    WHERE EXISTS (SELECT 1 FROM gpu_ops g WHERE g.trace_id = o.trace_id)
      AND o.name IN ('aten::mm', 'aten::bmm', 'aten::addmm')
      AND (starts_with(o.input_types::VARCHAR, '["c10::BFloat16"') OR starts_with(o.input_types::VARCHAR, '["c10::Half"'))
),
unaligned AS (
    SELECT * FROM mms
    WHERE list_bool_or(list_transform(dims, lambda s: coalesce(list_bool_or(list_transform(s[-2:],
                                                                             lambda d: d % 8 <> 0)), false)))
),
gpu AS (  -- the kernels launched by the calls right under those ops
    SELECT trace_id, event_id, sum(kernel_ns)::BIGINT AS kernel_ns
    FROM (SELECT DISTINCT r.trace_id, r.parent_event_id AS event_id, g.event_id AS kernel_id, g.dur_ns AS kernel_ns
          FROM runtime r
          SEMI JOIN unaligned u ON u.trace_id = r.trace_id AND u.event_id = r.parent_event_id
          JOIN gpu_ops g ON g.trace_id = r.trace_id AND g.correlation = r.correlation
          WHERE g.kind = 'kernel' AND g.dur_ns IS NOT NULL)
    GROUP BY ALL
)
SELECT u.trace_id, u.event_id, u.name, u.ts_ns, u.dur_ns, g.kernel_ns AS at_stake_ns,
       u.dtype || ' ' || u.input_dims::VARCHAR AS detail, u.pid, u.tid, u.ts_ns AS host_ts_ns, u.event_id AS op_event_id
FROM unaligned u
LEFT JOIN gpu g USING (trace_id, event_id)

-- @skipped
{{ skipped_unless(['gpu', 'shapes']) }}
