-- kernels: the device summary. Per trace and device, per kernel name (or, with
-- --group-by-launch, per name + grid + block): how often it ran, how long,
-- its share of the device's busy time, the work it did (FLOPs, bytes from
-- kernel_estimates) and how close that came to the device's datasheet peaks
-- (gpu_devices, or --peak-tflops / --peak-gbps), with its arithmetic
-- intensity against the device's ridge point (compute- or memory-bound).
-- question: Which kernels take each device's time, and how close do they run to its datasheet peak?
--
-- Busy time: the union of the device's kernel, memcpy and memset intervals
-- (overlaps on several streams counted once; union_lengths, sql/templates/intervals.sql).
-- Rates and % of peak use only the kernels whose FLOPs (bytes) are known:
-- achieved_tflops = sum(flops) / sum(their dur); compute_pct = sum(flops) /
-- sum(dur * peak of each kernel's dtype), so a name whose kernels ran in
-- different dtypes is weighted by time. FLOPs and bytes are estimates from the
-- op's shapes (kernel_estimates): above 100% of a peak (over_peak) the estimate
-- is not what the kernel did, and a note names the estimator and the op that
-- gave it, and the usual reason: a Winograd/FFT convolution does fewer
-- multiplies than the direct formula counts; a kernel served from L2 cache
-- moves less DRAM traffic than the estimate; a gather/index kernel reads only
-- the rows it picks.
--
-- uses: device
-- option: --limit/-n INTEGER >= 0 = 20  rows per device (0 = all)
-- option: --sort/-s CHOICE(total,count,mean,max,min,busy,flops,bytes,tflops,gbps,compute,bandwidth,intensity,name) = total  order of the rows
-- option: --group-by-launch FLAG  one row per kernel name + grid + block
-- option: --occupancy FLAG  each row's mean blocks per SM and est. achieved occupancy (TensorBoard's kernel view)
-- option: --dtype VARCHAR  dtype for kernels whose op records no input types (fp32, tf32, bf16, fp16, fp8, fp64, int8; or float, bfloat16, half)
-- option: --peak-tflops DOUBLE > 0  compute peak, TFLOP/s (overrides the device table)
-- option: --peak-gbps DOUBLE > 0  DRAM bandwidth peak, GB/s (overrides the device table)
-- requires: kernel_estimates, gpu_devices, gpu_ops, kernels, trace_files, cpu_ops, launches
--
-- Columns:
-- run                   VARCHAR  run label
-- trace_id              INTEGER  trace
-- rank                  INTEGER  rank of the trace (NULL if unknown)
-- device                INTEGER  GPU index
-- name                  VARCHAR  kernel name
-- grid                  VARCHAR  grid dimensions (only with --group-by-launch)
-- block                 VARCHAR  block dimensions (only with --group-by-launch)
-- count                 BIGINT   executions
-- total_us              DOUBLE   total duration, us
-- mean_us               DOUBLE   per execution, us
-- min_us                DOUBLE  [wide]  shortest execution, us
-- max_us                DOUBLE  [wide]  longest execution, us
-- busy_pct              DOUBLE   total_us / the device's busy time, %
-- tensor_cores_used     BOOLEAN  [wide]  the kernel uses Tensor Cores, by TensorBoard's PyTorch profiler
--                                plugin's rule on its name and newer kernels (kernel_categories.uses_tensor_cores)
-- blocks_per_sm         DOUBLE   blocks per SM (kernels.blocks_per_sm), mean weighted by duration, as
--                                TensorBoard's kernel view (only with --occupancy)
-- occupancy_pct         DOUBLE   est. achieved occupancy (kernels.occupancy_pct), mean weighted by
--                                duration, % (only with --occupancy)
-- over_peak             VARCHAR  'compute', 'bandwidth' or 'compute,bandwidth': above 100% of that peak,
--                                which no kernel can be; a note says which estimator and op gave the
--                                FLOPs (bytes) and what the kernel does instead. NULL: within the peaks
-- flops                 BIGINT  [wide]  FLOPs (sum over kernels with an estimate; NULL: none known)
-- bytes                 BIGINT  [wide]  bytes moved (same rule)
-- achieved_tflops       DOUBLE   flops / duration of those kernels, TFLOP/s
-- achieved_gbps         DOUBLE   bytes / duration of those kernels, GB/s
-- peak_dtype            VARCHAR  [wide]  which compute peak applies (bf16, tf32, ...; 'bf16,fp32': the first
--                                and last in alphabetical order when the kernels of a row ran in several)
-- peak_tflops           DOUBLE  [wide]  that peak, TFLOP/s (time-weighted when several)
-- compute_pct           DOUBLE   achieved / peak compute, %
-- peak_gbps             DOUBLE  [wide]  DRAM peak, GB/s
-- bandwidth_pct         DOUBLE   achieved / peak bandwidth, %
-- flops_per_byte        DOUBLE  [wide]  arithmetic intensity, FLOP/byte (kernels with both estimates)
-- ridge_flops_per_byte  DOUBLE  [wide]  the device's ridge point for this dtype: peak FLOP/s / peak byte/s
-- bound                 VARCHAR  'compute' (intensity >= ridge), 'memory', or NULL (unknown)
-- flops_op              VARCHAR  [wide]  the op whose estimate gave the row's kernel with the most FLOPs
--                                (e.g. 'aten::mm'; NULL: no FLOPs known)
-- flops_formula         VARCHAR  [wide]  that estimate's estimator (gemm, conv, attention, ...)
-- bytes_op              VARCHAR  [wide]  the op whose estimate gave the row's kernel with the most bytes
-- bytes_formula         VARCHAR  [wide]  that estimate's rule (elementwise, reduction, ...)
{% from "templates/scope.sql" import run_scope, device_scope with context %}
{% from "templates/intervals.sql" import union_lengths %}
{% from "templates/numbers.sql" import rounded, weighted_mean %}
{% from "templates/categories.sql" import uses_tensor_cores %}
{%- set orders = {
    'total': 'total_us DESC', 'count': 'count DESC, total_us DESC', 'mean': 'mean_us DESC',
    'max': 'max_us DESC', 'min': 'min_us DESC', 'busy': 'busy_pct DESC NULLS LAST, total_us DESC',
    'flops': 'flops DESC NULLS LAST, total_us DESC', 'bytes': 'bytes DESC NULLS LAST, total_us DESC',
    'tflops': 'achieved_tflops DESC NULLS LAST, total_us DESC',
    'gbps': 'achieved_gbps DESC NULLS LAST, total_us DESC',
    'compute': 'compute_pct DESC NULLS LAST, total_us DESC',
    'bandwidth': 'bandwidth_pct DESC NULLS LAST, total_us DESC',
    'intensity': 'flops_per_byte DESC NULLS LAST, total_us DESC', 'name': 'name'} %}
{%- set order_by = orders[sort] ~ ', name' ~ (', grid, block' if group_by_launch else '') %}
WITH scope AS (
    SELECT trace_id, run, rank FROM trace_files WHERE TRUE {{ run_scope() }}
),
dev_ops AS (
    SELECT g.trace_id, g.device, g.ts_ns, g.end_ns
    FROM gpu_ops g JOIN scope s USING (trace_id)
    WHERE g.kind IN ('kernel', 'memcpy', 'memset') AND g.ts_ns IS NOT NULL AND g.end_ns IS NOT NULL
    {{- device_scope('g.') }}
),
busy AS (
    {%- if materialized is defined and 'gpu_busy_intervals' in materialized %}
    -- the connection holds each device's busy intervals computed (the HTML page,
    -- html/page.py share_view): the same union of the same kernels, memcpys and
    -- memsets, summed instead of merged again
    SELECT b.trace_id, b.device, sum(b.dur_ns)::BIGINT AS busy_ns
    FROM gpu_busy_intervals b JOIN scope s USING (trace_id)
    WHERE b.scope = 'device' {{- device_scope('b.') }}
    GROUP BY b.trace_id, b.device
    {%- else %}
    {{ union_lengths('dev_ops', ['trace_id', 'device']) | indent(4) }}
    {%- endif %}
),
k AS (
    SELECT e.trace_id, e.device, e.name, e.dur_ns, e.flops, e.bytes, e.op_name, e.flops_formula, e.bytes_formula,
           {%- if group_by_launch %}
           kk.grid::VARCHAR AS grid, kk.block::VARCHAR AS block,
           {%- endif %}
           {%- if occupancy %}
           kk.blocks_per_sm, kk.occupancy_pct,
           {%- endif %}
           coalesce(e.peak_dtype, $default_peak_dtype) AS pdt,
           coalesce($peak_tflops, CASE coalesce(e.peak_dtype, $default_peak_dtype)
               WHEN 'fp64' THEN p.fp64_tflops WHEN 'fp32' THEN p.fp32_tflops WHEN 'tf32' THEN p.tf32_tflops
               WHEN 'bf16' THEN p.bf16_tflops WHEN 'fp16' THEN p.fp16_tflops WHEN 'fp8' THEN p.fp8_tflops
               WHEN 'fp4' THEN p.fp4_tflops WHEN 'int8' THEN p.int8_tops END) AS peak_t,
           coalesce($peak_gbps, p.dram_gbps) AS peak_g
    FROM kernel_estimates e
    JOIN scope s USING (trace_id)
    LEFT JOIN gpu_devices p ON p.trace_id = e.trace_id AND p.device = e.device
    {%- if group_by_launch or occupancy %}
    -- (args read only when asked: ~30% of the report's CPU on a 100 MB trace)
    LEFT JOIN kernels kk ON kk.trace_id = e.trace_id AND kk.event_id = e.event_id
    {%- endif %}
    WHERE TRUE {{ device_scope('e.') }}
),
agg AS (
    SELECT trace_id, device, name,
           {%- if group_by_launch %} grid, block,{% endif %}
           count(*) AS count,
           sum(dur_ns) AS total_ns, min(dur_ns) AS min_ns, max(dur_ns) AS max_ns,
           sum(flops) AS flops, sum(bytes) AS bytes,
           {%- if occupancy %}
           -- weighted by duration (a kernel of 0 ns counts for nothing), as TensorBoard's kernel view
           {{ weighted_mean('blocks_per_sm') }} AS bps,
           {{ weighted_mean('occupancy_pct') }} AS occ,
           {%- endif %}
           sum(dur_ns) FILTER (WHERE flops IS NOT NULL) AS flops_ns,
           sum(dur_ns) FILTER (WHERE bytes IS NOT NULL) AS bytes_ns,
           sum(flops) FILTER (WHERE peak_t IS NOT NULL) AS pk_flops,
           sum(dur_ns * peak_t) FILTER (WHERE flops IS NOT NULL AND peak_t IS NOT NULL) AS pk_t_ns,
           sum(bytes) FILTER (WHERE peak_g IS NOT NULL) AS pk_bytes,
           sum(dur_ns * peak_g) FILTER (WHERE bytes IS NOT NULL AND peak_g IS NOT NULL) AS pk_g_ns,
           sum(flops) FILTER (WHERE bytes IS NOT NULL) AS ai_flops,
           sum(bytes) FILTER (WHERE flops IS NOT NULL) AS ai_bytes,
           -- time-weighted peaks (a plain mean when every kernel took 0 ns)
           coalesce({{ weighted_mean('peak_t') }},
                    avg(peak_t)) AS peak_tflops,
           coalesce({{ weighted_mean('peak_g') }},
                    avg(peak_g)) AS peak_gbps,
           min(pdt) FILTER (WHERE peak_t IS NOT NULL) AS pdt_lo,
           max(pdt) FILTER (WHERE peak_t IS NOT NULL) AS pdt_hi,
           -- ties (kernels of the same FLOPs from different ops or estimators) broken by op name,
           -- then estimator: the same row every run
           arg_max(op_name, (flops, op_name, flops_formula)) FILTER (WHERE flops > 0) AS flops_op,
           arg_max(flops_formula, (flops, op_name, flops_formula)) FILTER (WHERE flops > 0) AS flops_formula,
           arg_max(op_name, (bytes, op_name, bytes_formula)) FILTER (WHERE bytes > 0) AS bytes_op,
           arg_max(bytes_formula, (bytes, op_name, bytes_formula)) FILTER (WHERE bytes > 0) AS bytes_formula
    FROM k
    GROUP BY ALL
),
report AS (
    SELECT s.run, a.trace_id, s.rank, a.device, a.name,
           {%- if group_by_launch %} a.grid, a.block,{% endif %}
           a.count,
           {{ rounded('a.total_ns / 1e3', 3) }} AS total_us,
           {{ rounded('a.total_ns / 1e3 / a.count', 3) }} AS mean_us,
           {{ rounded('a.min_ns / 1e3', 3) }} AS min_us,
           {{ rounded('a.max_ns / 1e3', 3) }} AS max_us,
           {{ rounded('100.0 * a.total_ns / nullif(b.busy_ns, 0)', 2) }} AS busy_pct,
           -- (from the name, per row: the rule kernel_categories applies, without its pass over gpu_ops)
           {{ uses_tensor_cores('a.name') }} AS tensor_cores_used,
           {%- if occupancy %}
           {{ rounded('a.bps', 3) }} AS blocks_per_sm,
           {{ rounded('a.occ', 2) }} AS occupancy_pct,
           {%- endif %}
           nullif(concat_ws(',', CASE WHEN a.pk_flops > a.pk_t_ns * 1e3 THEN 'compute' END,
                                 CASE WHEN a.pk_bytes > a.pk_g_ns THEN 'bandwidth' END), '') AS over_peak,
           a.flops::BIGINT AS flops,
           a.bytes::BIGINT AS bytes,
           {{ rounded('a.flops / nullif(a.flops_ns, 0) / 1e3', 3) }} AS achieved_tflops,
           {{ rounded('a.bytes / nullif(a.bytes_ns, 0)', 2) }} AS achieved_gbps,
           CASE WHEN a.pdt_lo = a.pdt_hi THEN a.pdt_lo ELSE a.pdt_lo || ',' || a.pdt_hi END AS peak_dtype,
           {{ rounded('a.peak_tflops', 2) }} AS peak_tflops,
           {{ rounded('100.0 * a.pk_flops / nullif(a.pk_t_ns * 1e3, 0)', 2) }} AS compute_pct,
           {{ rounded('a.peak_gbps', 1) }} AS peak_gbps,
           {{ rounded('100.0 * a.pk_bytes / nullif(a.pk_g_ns, 0)', 2) }} AS bandwidth_pct,
           {{ rounded('a.ai_flops / nullif(a.ai_bytes, 0)', 3) }} AS flops_per_byte,
           {{ rounded('a.peak_tflops * 1e3 / nullif(a.peak_gbps, 0)', 2) }} AS ridge_flops_per_byte,
           CASE WHEN a.ai_bytes IS NULL OR a.ai_bytes = 0 OR a.peak_tflops IS NULL OR a.peak_gbps IS NULL THEN NULL
                WHEN a.ai_flops / a.ai_bytes >= a.peak_tflops * 1e3 / a.peak_gbps THEN 'compute'
                ELSE 'memory' END AS bound,
           a.flops_op, a.flops_formula, a.bytes_op, a.bytes_formula
    FROM agg a
    JOIN scope s USING (trace_id)
    LEFT JOIN busy b ON b.trace_id = a.trace_id AND b.device IS NOT DISTINCT FROM a.device
)
SELECT * FROM report
{%- if limit %}
QUALIFY row_number() OVER (PARTITION BY trace_id, device ORDER BY {{ order_by }}) <= $limit
{%- endif %}
ORDER BY run, trace_id, device, {{ order_by }}

-- @notes
-- One line per thing the report cannot say, and why (in this order: per trace,
-- devices not in deviceProperties that get the trace's only model, devices
-- without a peak (also when the device_peaks table is empty), rows without a
-- compute peak, then rows above 100% of a peak).
{%- set missing_opts = ('/'.join((['--peak-tflops'] if peak_tflops is none else [])
                                + (['--peak-gbps'] if peak_gbps is none else []))) %}
{%- set need_peaks = peak_tflops is none or peak_gbps is none %}
{%- set where = "(' (device ' || $device || ')')" if device is not none else "''" %}
WITH t AS (
    SELECT f.trace_id, f.file_name,
           (SELECT count(*) FROM kernels k WHERE k.trace_id = f.trace_id {{ device_scope('k.') }}) AS n_kernels,
           (SELECT count(*) FROM gpu_devices d WHERE d.trace_id = f.trace_id AND d.listed) AS n_devices,
           EXISTS (SELECT 1 FROM cpu_ops o WHERE o.trace_id = f.trace_id AND o.input_dims IS NOT NULL) AS has_shapes,
           EXISTS (SELECT 1 FROM {{ result }} r WHERE r.trace_id = f.trace_id
                   AND (r.flops IS NOT NULL OR r.bytes IS NOT NULL)) AS has_estimates
    FROM trace_files f
    WHERE TRUE {{ run_scope('f.') }}
),
-- rows above 100% of a peak: which op and estimator gave the FLOPs (bytes), and why a
-- kernel can beat the estimate; the 20 furthest above, then how many more
flagged AS (
    -- which op and estimator gave the FLOPs (bytes): the main query's columns, so
    -- kernel_estimates is not read again
    SELECT r.trace_id, r.device, r.name, f.file_name, r.what, max(r.pct) AS pct,
           arg_max(r.peak_dtype, r.pct) AS peak_dtype,
           arg_max(r.flops_op, r.pct) AS flops_op, arg_max(r.flops_formula, r.pct) AS flops_formula,
           arg_max(r.bytes_op, r.pct) AS bytes_op, arg_max(r.bytes_formula, r.pct) AS bytes_formula
    FROM (SELECT *, 'compute' AS what, compute_pct AS pct FROM {{ result }}
          UNION ALL
          SELECT *, 'bandwidth', bandwidth_pct FROM {{ result }}) r
    JOIN t f USING (trace_id)
    WHERE r.pct > 100
    GROUP BY r.trace_id, r.device, r.name, f.file_name, r.what
),
over_peak_notes AS (
    SELECT trace_id, row_number() OVER (ORDER BY pct DESC, trace_id, device, name, what) AS n,
           file_name || ': ' || CASE WHEN length(name) > 60 THEN left(name, 59) || '…' ELSE name END
           || ' (device ' || device || ') runs at ' || round(pct)::BIGINT || '% of the '
           || CASE what WHEN 'compute' THEN
           {%- if peak_tflops is none %} coalesce(peak_dtype || ' ', '') || 'compute peak'
           {%- else %} 'compute peak given (--peak-tflops)'{% endif %}
                        ELSE {% if peak_gbps is none %}'DRAM bandwidth peak'{% else %}'bandwidth peak given (--peak-gbps)'{% endif %} END
           || ', which no kernel reaches (over_peak): '
           || CASE WHEN what = 'compute' THEN
                  'its FLOPs come from ' || coalesce(flops_op, 'its op') || ' by the '
                  || coalesce(flops_formula || ' estimator (duckprof/estimators/'
                              || CASE flops_formula WHEN 'conv_backward' THEN 'conv' WHEN 'attention_causal'
                                                    THEN 'attention' ELSE flops_formula END || '.py)',
                              'estimator of an older duckprof')
                  || CASE WHEN flops_formula LIKE 'conv%'
                          THEN '; a Winograd or FFT convolution does fewer multiplies than the direct formula counts'
                          WHEN flops_formula LIKE 'attention%'
                          THEN '; an attention kernel that skips masked blocks (causal or windowed attention not '
                               || 'recorded in the op''s args) does less work'
                          ELSE '; check the dtype whose peak applies and the op''s recorded shapes' END
              ELSE
                  'its bytes come from ' || coalesce(bytes_op, 'its op') || ' by the '
                  || coalesce(bytes_formula || ' rule', 'rule of an older duckprof')
                  || ' (duckprof/estimators/traffic.py), the minimum DRAM traffic of the op''s tensors; '
                  || 'data served from L2 cache (small or reused tensors), or a gather that reads only the '
                  || 'rows it picks, moves less'
              END AS note
    FROM flagged
),
unlinked AS (  -- of the traces with shapes but no estimate, those where no kernel found its op
    -- (launches is costly: it is read only for those traces, usually none)
    SELECT trace_id FROM t
    WHERE n_kernels > 0 AND has_shapes AND NOT has_estimates
      AND trace_id NOT IN (SELECT l.trace_id FROM launches l
                           WHERE l.trace_id IN (SELECT trace_id FROM t WHERE n_kernels > 0 AND has_shapes
                                                AND NOT has_estimates)
                             AND l.kind = 'kernel' AND l.op_event_id IS NOT NULL)
),
notes AS (
    SELECT 0 AS section, NULL::INTEGER AS trace_id, 0 AS k,
           'no traces loaded' {% if run is not none %}|| ' in run ''' || $run || ''''{% endif %} AS note
    WHERE NOT EXISTS (SELECT 1 FROM t)
    UNION ALL
    SELECT 1, trace_id, 0, file_name || ': no GPU kernels in this trace' || {{ where }}
    FROM t WHERE n_kernels = 0
    UNION ALL
    SELECT 1, trace_id, 1, file_name || ': no input shapes recorded (record_shapes=False): '
                              || 'FLOPs and bytes are unknown, so no % of peak'
    FROM t WHERE n_kernels > 0 AND NOT has_shapes
    UNION ALL
    SELECT 1, trace_id, 1, file_name || ': no kernel is linked to the op that launched it (no External id or '
                              || 'correlation to a cpu_op), so FLOPs and bytes are unknown'
    FROM t WHERE trace_id IN (SELECT trace_id FROM unlinked)
    {%- if need_peaks %}
    UNION ALL
    SELECT 1, trace_id, 2, file_name || ': no deviceProperties, so no device peaks; pass {{ missing_opts }}'
    FROM t WHERE n_kernels > 0 AND n_devices = 0
    UNION ALL
    SELECT DISTINCT 3, p.trace_id, p.device,
           f.file_name || ': no peak for device ' || p.device
           || CASE WHEN p.listed OR p.assumed THEN ' ''' || coalesce(p.device_name, '') || ''''
                   ELSE ' (it is not in the trace''s deviceProperties, which name several device models)' END
           || '; pass {{ missing_opts }}'
    FROM gpu_devices p JOIN t f USING (trace_id)
    WHERE p.peak_device IS NULL AND f.n_devices > 0 {{ device_scope('p.') }}
      AND EXISTS (SELECT 1 FROM {{ result }} r WHERE r.trace_id = p.trace_id AND r.device = p.device)
    {%- endif %}
    UNION ALL
    SELECT DISTINCT 2, p.trace_id, p.device,
           f.file_name || ': device ' || p.device || ' is not in the trace''s deviceProperties; it gets the '
           || 'peaks of the only device model they name, ''' || coalesce(p.device_name, '') || ''''
    FROM gpu_devices p JOIN t f USING (trace_id)
    WHERE p.assumed {{ device_scope('p.') }}
      AND EXISTS (SELECT 1 FROM {{ result }} r WHERE r.trace_id = p.trace_id AND r.device = p.device)
    {%- if peak_tflops is none %}
    UNION ALL
    SELECT 4, NULL, 0, format('{:,}', n) || ' row(s) have FLOPs but no compute peak (dtype unknown, or no '
                       || 'datasheet figure for it), so no compute %; pass --dtype or --peak-tflops'
    FROM (SELECT count(*) AS n FROM {{ result }} r
          WHERE r.flops > 0 AND r.peak_tflops IS NULL
            AND EXISTS (SELECT 1 FROM gpu_devices p WHERE p.trace_id = r.trace_id
                        AND p.device = r.device AND p.peak_device IS NOT NULL))
    WHERE n > 0
    {%- endif %}
    UNION ALL
    SELECT 5, NULL, n, note FROM over_peak_notes WHERE n <= 20
    UNION ALL
    SELECT 6, NULL, 0, format('{:,}', count(*)) || ' more kernel(s) above 100% of a peak (over_peak)'
    FROM over_peak_notes WHERE n > 20 HAVING count(*) > 0
)
SELECT note FROM notes ORDER BY section, trace_id, k, note
