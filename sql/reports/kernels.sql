-- kernels: the device summary. Per trace and device, per kernel name (or, with
-- --group-by-launch, per name + grid + block): how often it ran, how long,
-- its share of the device's busy time, the work it did (FLOPs, bytes from
-- kernel_estimates) and how close that came to the device's datasheet peaks
-- (device_peak, or --peak-tflops / --peak-gbps), with its arithmetic
-- intensity against the device's ridge point (compute- or memory-bound).
--
-- Busy time: the union of the device's kernel, memcpy and memset intervals
-- (overlaps on several streams counted once; sql/templates/busy_time.sql).
-- Rates and % of peak use only the kernels whose FLOPs (bytes) are known:
-- achieved_tflops = sum(flops) / sum(their dur); compute_pct = sum(flops) /
-- sum(dur * peak of each kernel's dtype), so a name whose kernels ran in
-- different dtypes is weighted by time.
--
-- Bound parameters: run (optional), device (optional), limit (rows per device,
-- 0 = all), default_peak_dtype (peak key for kernels with no dtype, NULL =
-- none), peak_tflops / peak_gbps (overrides, NULL = device_peak).
-- Structure: scope (run filter), device_filter, group_by_launch, order_by, limit.
--
-- run             VARCHAR  run label
-- trace_id        INTEGER  trace
-- rank            INTEGER  rank of the trace (NULL if unknown)
-- device          INTEGER  GPU index
-- name            VARCHAR  kernel name
-- grid, block     VARCHAR  launch configuration (only with --group-by-launch)
-- count           BIGINT   executions
-- total_us        DOUBLE   total duration, us
-- mean_us, min_us, max_us  DOUBLE  per execution, us
-- busy_pct        DOUBLE   total_us / the device's busy time, %
-- flops           BIGINT   FLOPs (sum over kernels with an estimate; NULL: none known)
-- bytes           BIGINT   bytes moved (same rule)
-- achieved_tflops DOUBLE   flops / duration of those kernels, TFLOP/s
-- achieved_gbps   DOUBLE   bytes / duration of those kernels, GB/s
-- peak_dtype      VARCHAR  which compute peak applies (bf16, tf32, ...; 'bf16,fp32': the first and
--                          last in alphabetical order when the kernels of a row ran in several)
-- peak_tflops     DOUBLE   that peak, TFLOP/s (time-weighted when several)
-- compute_pct     DOUBLE   achieved / peak compute, %
-- peak_gbps       DOUBLE   DRAM peak, GB/s
-- bandwidth_pct   DOUBLE   achieved / peak bandwidth, %
-- flops_per_byte  DOUBLE   arithmetic intensity, FLOP/byte (kernels with both estimates)
-- ridge_flops_per_byte DOUBLE  the device's ridge point for this dtype: peak FLOP/s / peak byte/s
-- bound           VARCHAR  'compute' (intensity >= ridge), 'memory', or NULL (unknown)
{% from "templates/busy_time.sql" import busy_ctes %}
WITH scope AS (
    SELECT trace_id, run, rank FROM traces WHERE {{ scope }}
),
dev_ops AS (
    SELECT g.trace_id, g.device, g.ts_ns, g.end_ns
    FROM gpu_ops g JOIN scope s USING (trace_id)
    WHERE g.kind IN ('kernel', 'memcpy', 'memset') AND g.ts_ns IS NOT NULL AND g.end_ns IS NOT NULL
    {%- if device_filter %} AND g.device = $device{% endif %}
),
{{ busy_ctes("dev_ops") }},
k AS (
    SELECT e.trace_id, e.device, e.name, e.dur_ns, e.flops, e.bytes,
           {%- if group_by_launch %}
           kk.grid::VARCHAR AS grid, kk.block::VARCHAR AS block,
           {%- endif %}
           coalesce(e.peak_dtype, $default_peak_dtype) AS pdt,
           coalesce($peak_tflops, CASE coalesce(e.peak_dtype, $default_peak_dtype)
               WHEN 'fp64' THEN p.fp64_tflops WHEN 'fp32' THEN p.fp32_tflops WHEN 'tf32' THEN p.tf32_tflops
               WHEN 'bf16' THEN p.bf16_tflops WHEN 'fp16' THEN p.fp16_tflops WHEN 'fp8' THEN p.fp8_tflops
               WHEN 'fp4' THEN p.fp4_tflops WHEN 'int8' THEN p.int8_tops END) AS peak_t,
           coalesce($peak_gbps, p.dram_gbps) AS peak_g
    FROM kernel_estimates e
    JOIN scope s USING (trace_id)
    LEFT JOIN device_peak p ON p.trace_id = e.trace_id AND p.device = e.device
    {%- if group_by_launch %}
    LEFT JOIN kernels kk ON kk.trace_id = e.trace_id AND kk.event_id = e.event_id
    {%- endif %}
    {%- if device_filter %}
    WHERE e.device = $device
    {%- endif %}
),
agg AS (
    SELECT trace_id, device, name,
           {%- if group_by_launch %} grid, block,{% endif %}
           count(*) AS count,
           sum(dur_ns) AS total_ns, min(dur_ns) AS min_ns, max(dur_ns) AS max_ns,
           sum(flops) AS flops, sum(bytes) AS bytes,
           sum(dur_ns) FILTER (WHERE flops IS NOT NULL) AS flops_ns,
           sum(dur_ns) FILTER (WHERE bytes IS NOT NULL) AS bytes_ns,
           sum(flops) FILTER (WHERE peak_t IS NOT NULL) AS pk_flops,
           sum(dur_ns * peak_t) FILTER (WHERE flops IS NOT NULL AND peak_t IS NOT NULL) AS pk_t_ns,
           sum(bytes) FILTER (WHERE peak_g IS NOT NULL) AS pk_bytes,
           sum(dur_ns * peak_g) FILTER (WHERE bytes IS NOT NULL AND peak_g IS NOT NULL) AS pk_g_ns,
           sum(flops) FILTER (WHERE bytes IS NOT NULL) AS ai_flops,
           sum(bytes) FILTER (WHERE flops IS NOT NULL) AS ai_bytes,
           -- time-weighted peaks (a plain mean when every kernel took 0 ns)
           coalesce(sum(dur_ns * peak_t) / nullif(sum(dur_ns) FILTER (WHERE peak_t IS NOT NULL), 0),
                    avg(peak_t)) AS peak_tflops,
           coalesce(sum(dur_ns * peak_g) / nullif(sum(dur_ns) FILTER (WHERE peak_g IS NOT NULL), 0),
                    avg(peak_g)) AS peak_gbps,
           min(pdt) FILTER (WHERE peak_t IS NOT NULL) AS pdt_lo,
           max(pdt) FILTER (WHERE peak_t IS NOT NULL) AS pdt_hi
    FROM k
    GROUP BY ALL
),
report AS (
    SELECT s.run, a.trace_id, s.rank, a.device, a.name,
           {%- if group_by_launch %} a.grid, a.block,{% endif %}
           a.count,
           round(a.total_ns / 1e3, 3) AS total_us,
           round(a.total_ns / 1e3 / a.count, 3) AS mean_us,
           round(a.min_ns / 1e3, 3) AS min_us,
           round(a.max_ns / 1e3, 3) AS max_us,
           round(100.0 * a.total_ns / nullif(b.busy_ns, 0), 2) AS busy_pct,
           a.flops::BIGINT AS flops,
           a.bytes::BIGINT AS bytes,
           round(a.flops / nullif(a.flops_ns, 0) / 1e3, 3) AS achieved_tflops,
           round(a.bytes / nullif(a.bytes_ns, 0), 2) AS achieved_gbps,
           CASE WHEN a.pdt_lo = a.pdt_hi THEN a.pdt_lo ELSE a.pdt_lo || ',' || a.pdt_hi END AS peak_dtype,
           round(a.peak_tflops, 2) AS peak_tflops,
           round(100.0 * a.pk_flops / nullif(a.pk_t_ns * 1e3, 0), 2) AS compute_pct,
           round(a.peak_gbps, 1) AS peak_gbps,
           round(100.0 * a.pk_bytes / nullif(a.pk_g_ns, 0), 2) AS bandwidth_pct,
           round(a.ai_flops / nullif(a.ai_bytes, 0), 3) AS flops_per_byte,
           round(a.peak_tflops * 1e3 / nullif(a.peak_gbps, 0), 2) AS ridge_flops_per_byte,
           CASE WHEN a.ai_bytes IS NULL OR a.ai_bytes = 0 OR a.peak_tflops IS NULL OR a.peak_gbps IS NULL THEN NULL
                WHEN a.ai_flops / a.ai_bytes >= a.peak_tflops * 1e3 / a.peak_gbps THEN 'compute'
                ELSE 'memory' END AS bound
    FROM agg a
    JOIN scope s USING (trace_id)
    LEFT JOIN busy b ON b.trace_id = a.trace_id AND b.device IS NOT DISTINCT FROM a.device
)
SELECT * FROM report
{%- if limit %}
QUALIFY row_number() OVER (PARTITION BY trace_id, device ORDER BY {{ order_by }}) <= $limit
{%- endif %}
ORDER BY run, trace_id, device, {{ order_by }}
