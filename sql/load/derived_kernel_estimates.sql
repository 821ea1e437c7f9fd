-- The derived_kernel_estimates rows of the traces in $trace_ids (INTEGER[]):
-- the kernel_estimates view's rows, computed here once per trace from the
-- stored launches (filled first), op_estimates and kernel_categories. How
-- FLOPs and bytes are shared among an op's kernels, and the dtype rules: see
-- sql/views/base/kernel_estimates.sql.
{% from "templates/op_signature.sql" import op_signature %}
{% from "templates/categories.sql" import math_categories, conv_helpers, sql_list, helpers_outside_conv,
                                          event_category %}
{% set in_traces = 'l.trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, l.trace_id)' %}
INSERT INTO derived_kernel_estimates
WITH k0 AS (
    SELECT l.trace_id, l.event_id, l.name, l.device, l.stream, l.ts_ns, l.dur_ns,
           l.op_event_id, l.op_name, e.flops AS op_flops, e.bytes AS op_bytes, e.dtype AS op_dtype,
           e.flops_formula, e.bytes_formula, {{ event_category() }} AS category,
           greatest(coalesce(l.dur_ns, 0), 0) AS d,
           coalesce(l.op_event_id, -l.event_id) AS op_key,  -- a kernel without op is its own group
           coalesce(c.category IN {{ sql_list(math_categories) }}
                    AND NOT regexp_matches(lower(l.name), '{{ conv_helpers }}'), false) AS is_math
    FROM launches l
    LEFT JOIN op_estimates e
      ON l.op_event_id IS NOT NULL
     AND e.sig = {{ op_signature('l.', name='op_name') }}
    LEFT JOIN kernel_categories c ON c.kind = l.kind AND c.name = l.name
    {{ helpers_outside_conv('l', launch_filter=in_traces) }}
    WHERE l.kind = 'kernel' AND {{ in_traces }}
),
per_op AS (  -- math kernels: those of a math category; every kernel of an op that has none
    SELECT trace_id, op_key, count(*) AS op_kernels, sum(d) AS op_dur, bool_or(is_math) AS any_math,
           CASE WHEN bool_or(is_math) THEN count(*) FILTER (WHERE is_math) ELSE count(*) END AS math_kernels,
           CASE WHEN bool_or(is_math) THEN sum(d) FILTER (WHERE is_math) ELSE sum(d) END AS math_dur
    FROM k0 GROUP BY trace_id, op_key
),
j AS NOT MATERIALIZED (  -- (a group, not a window over the op's kernels: no sort)
    SELECT k0.* EXCLUDE (is_math), k0.is_math OR NOT p.any_math AS math_kernel,
           p.op_kernels, p.op_dur, p.math_kernels, p.math_dur
    FROM k0 JOIN per_op p USING (trace_id, op_key)
),
split AS NOT MATERIALIZED (  -- ops with several kernels: floor of the proportional share ...
                             -- (read twice, by remainder and shared: split and j are computed
                             -- again, not every kernel's row held in between)
    SELECT *,
           CASE WHEN op_kernels = 1 THEN NULL WHEN NOT math_kernel AND op_flops IS NOT NULL THEN 0
                ELSE (op_flops::HUGEINT * f_wt // f_wt_total)::BIGINT END AS f0,
           CASE WHEN op_kernels > 1 THEN (op_bytes::HUGEINT * wt // wt_total)::BIGINT END AS b0
    FROM (SELECT *, CASE WHEN op_dur > 0 THEN d ELSE 1 END AS wt,
                    CASE WHEN op_dur > 0 THEN op_dur ELSE op_kernels END AS wt_total,
                    CASE WHEN math_dur > 0 THEN d ELSE 1 END AS f_wt,
                    CASE WHEN math_dur > 0 THEN math_dur ELSE math_kernels END AS f_wt_total
          FROM j)
),
remainder AS (  -- ... and what rounding left over (fewer than the kernels sharing) to the longest of them
    SELECT trace_id, op_key, any_value(op_flops) - sum(f0) AS f_rest, any_value(op_bytes) - sum(b0) AS b_rest,
           arg_max(event_id, (wt, -event_id)) AS longest,
           arg_max(event_id, (f_wt, -event_id)) FILTER (WHERE math_kernel) AS longest_math
    FROM split WHERE op_kernels > 1 GROUP BY trace_id, op_key
),
shared AS (
    SELECT s.trace_id, s.event_id, s.name, s.device, s.stream, s.ts_ns, s.dur_ns, s.op_event_id, s.op_name,
           s.op_kernels, s.category, s.math_kernel, s.op_flops, s.op_bytes, s.op_dtype, s.flops_formula,
           s.bytes_formula,
           CASE WHEN s.op_kernels = 1 THEN s.op_flops  -- most kernels: the only kernel of their op gets all of it
                ELSE s.f0 + CASE WHEN s.event_id = r.longest_math THEN r.f_rest ELSE 0 END END AS flops_share,
           CASE WHEN s.op_kernels = 1 THEN s.op_bytes
                ELSE s.b0 + CASE WHEN s.event_id = r.longest THEN r.b_rest ELSE 0 END END AS bytes_share
    FROM split s LEFT JOIN remainder r USING (trace_id, op_key)  -- (no row for an op's only kernel)
),
named AS (
    SELECT s.*,
           coalesce(s.op_dtype, CASE
               WHEN regexp_matches(s.name, 'bf16|bfloat16', 'i') THEN 'bf16'
               WHEN regexp_matches(s.name, 'e4m3|e5m2|fp8|float8', 'i') THEN 'fp8'
               WHEN regexp_matches(s.name, 'fp16|f16|half|h884|h1688|h16816', 'i') THEN 'fp16'
               WHEN regexp_matches(s.name, 'tf32|tfloat32|xf32|sgemm|fp32|f32', 'i') THEN 'fp32'
               WHEN regexp_matches(s.name, 'dgemm|fp64', 'i') THEN 'fp64'
           END) AS dtype_
    FROM shared s
)
SELECT trace_id, event_id, name, device, stream, ts_ns, dur_ns, op_event_id, op_name, op_kernels,
       category, CASE WHEN op_flops IS NOT NULL THEN math_kernel END AS math_kernel, op_flops, op_bytes,
       flops_share::BIGINT AS flops,
       bytes_share::BIGINT AS bytes,
       flops_formula, bytes_formula,
       dtype_ AS dtype,
       CASE WHEN op_dtype IS NOT NULL THEN 'op' WHEN dtype_ IS NOT NULL THEN 'kernel_name' END AS dtype_source,
       CASE WHEN dtype_ = 'fp32' AND regexp_matches(name, 'tf32|tfloat32|xf32|s1688', 'i') THEN 'tf32'
            WHEN dtype_ IN ('fp64', 'fp32', 'bf16', 'fp16', 'fp8', 'fp4', 'int8') THEN dtype_
            WHEN dtype_ = 'uint8' THEN 'int8'
       END AS peak_dtype
FROM named;
