-- trace_devices: every device of every trace (its deviceProperties entry) with
-- the datasheet peaks of the device_peaks row it matches, or NULL peaks when
-- none matches.
--
-- Matching (duckprof/peaks.py): first by name: rows whose device_pattern is
-- found in the deviceProperties name (case-insensitive regex; real names vary:
-- 'NVIDIA H100 80GB HBM3', 'NVIDIA A100-SXM4-80GB'); the lowest priority wins.
-- Only when no pattern matches (ROCm often reports 'AMD Radeon Graphics' or ''):
-- rows with a fallback memory range whose sm_count equals the device's SM/CU
-- count and whose [fallback_mem_gib_min, fallback_mem_gib_max] holds
-- totalGlobalMem / 2^30; the lowest priority wins.
--
-- requires: devices, device_peaks
--
-- Columns:
-- trace_id                INTEGER  trace
-- device                  INTEGER  device index (deviceProperties id)
-- device_name             VARCHAR  deviceProperties name as written
-- num_sms                 INTEGER  SMs / compute units as written
-- total_global_mem_bytes  BIGINT   as written
-- compute_major           INTEGER  compute capability, major (NVIDIA)
-- compute_minor           INTEGER  compute capability, minor
-- peak_device             VARCHAR  the matched model (device_peaks.device); NULL: no match
-- matched_by              VARCHAR  'name', 'memory_and_cus' (fallback) or NULL
-- fp64_tflops             DOUBLE   dense fp64 peak, TFLOP/s (NULL: no figure / no match)
-- fp32_tflops             DOUBLE   dense fp32 peak, TFLOP/s
-- tf32_tflops             DOUBLE   dense tf32 peak, TFLOP/s
-- bf16_tflops             DOUBLE   dense bf16 peak, TFLOP/s
-- fp16_tflops             DOUBLE   dense fp16 peak, TFLOP/s
-- fp8_tflops              DOUBLE   dense fp8 peak, TFLOP/s
-- fp4_tflops              DOUBLE   dense fp4 peak, TFLOP/s
-- int8_tops               DOUBLE   dense int8 peak, TOP/s
-- dram_gbps               DOUBLE   DRAM bandwidth, GB/s
CREATE OR REPLACE VIEW trace_devices AS
WITH candidates AS (
    SELECT d.trace_id, d.device, 1 AS how, 'name' AS matched_by,
           p.device AS peak_device, p.priority, p.device_pattern, p.fp64_tflops, p.fp32_tflops, p.tf32_tflops, p.bf16_tflops,
           p.fp16_tflops, p.fp8_tflops, p.fp4_tflops, p.int8_tops, p.dram_gbps
    FROM devices d
    JOIN device_peaks p
      ON p.device_pattern IS NOT NULL AND p.device_pattern <> ''
     AND regexp_matches(coalesce(d.name, ''), p.device_pattern, 'i')
    UNION ALL
    SELECT d.trace_id, d.device, 2 AS how, 'memory_and_cus' AS matched_by,
           p.device AS peak_device, p.priority, p.device_pattern, p.fp64_tflops, p.fp32_tflops, p.tf32_tflops, p.bf16_tflops,
           p.fp16_tflops, p.fp8_tflops, p.fp4_tflops, p.int8_tops, p.dram_gbps
    FROM devices d
    JOIN device_peaks p
      ON p.fallback_mem_gib_min IS NOT NULL AND p.fallback_mem_gib_max IS NOT NULL
     AND p.sm_count = d.num_sms
     AND d.total_global_mem_bytes / 1073741824.0 BETWEEN p.fallback_mem_gib_min AND p.fallback_mem_gib_max
),
best AS (
    SELECT * FROM candidates
    QUALIFY row_number() OVER (PARTITION BY trace_id, device ORDER BY how, priority, peak_device) = 1
)
SELECT d.trace_id, d.device, d.name AS device_name, d.num_sms, d.total_global_mem_bytes,
       d.compute_major, d.compute_minor, b.peak_device, b.matched_by,
       b.fp64_tflops, b.fp32_tflops, b.tf32_tflops, b.bf16_tflops, b.fp16_tflops, b.fp8_tflops,
       b.fp4_tflops, b.int8_tops, b.dram_gbps
FROM devices d
LEFT JOIN best b ON b.trace_id = d.trace_id AND b.device IS NOT DISTINCT FROM d.device;
