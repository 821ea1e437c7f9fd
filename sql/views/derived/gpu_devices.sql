-- gpu_devices: every device of every trace that ran device activity or is
-- listed in the trace's deviceProperties, with the datasheet peaks that apply
-- to it: what the kernels report divides by.
--
-- A device listed in deviceProperties has its own entry (trace_devices). A
-- device that ran work but is not listed (an MI300X serving trace lists id 0
-- and runs its kernels on device 2) gets the entry of the trace's only device
-- model when all its deviceProperties entries name one model (the same
-- deviceProperties name; assumed = true, and the kernels report says so);
-- when they name several models, or the trace has no deviceProperties, it has
-- no name and no peaks (the kernels report says "no peak for device N").
--
-- requires: gpu_ops, trace_devices
--
-- Columns:
-- trace_id     INTEGER  trace
-- device       INTEGER  device index (gpu_ops.device / deviceProperties id)
-- listed       BOOLEAN  the trace's deviceProperties has an entry for this index
-- assumed      BOOLEAN  not listed, so the trace's only device model is assumed for it
-- device_name  VARCHAR  deviceProperties name (its own entry, or the assumed one); NULL: unknown
-- peak_device  VARCHAR  the matched model (device_peaks.device); NULL: no match or unknown
-- matched_by   VARCHAR  'name', 'memory_and_cus' (trace_devices) or NULL
-- fp64_tflops  DOUBLE   dense fp64 peak, TFLOP/s (NULL: no figure / no match)
-- fp32_tflops  DOUBLE   dense fp32 peak, TFLOP/s
-- tf32_tflops  DOUBLE   dense tf32 peak, TFLOP/s
-- bf16_tflops  DOUBLE   dense bf16 peak, TFLOP/s
-- fp16_tflops  DOUBLE   dense fp16 peak, TFLOP/s
-- fp8_tflops   DOUBLE   dense fp8 peak, TFLOP/s
-- fp4_tflops   DOUBLE   dense fp4 peak, TFLOP/s
-- int8_tops    DOUBLE   dense int8 peak, TOP/s
-- dram_gbps    DOUBLE   DRAM bandwidth, GB/s
CREATE OR REPLACE VIEW gpu_devices AS
WITH used AS (
    SELECT DISTINCT trace_id, device FROM gpu_ops WHERE device IS NOT NULL
),
only_model AS (  -- traces whose deviceProperties name one model: one of its entries
    SELECT trace_id, arg_min(device, device) AS device
    FROM trace_devices
    GROUP BY trace_id
    HAVING count(DISTINCT coalesce(device_name, '')) = 1
),
rows AS (
    SELECT trace_id, device, true AS listed, false AS assumed, device AS entry FROM trace_devices
    UNION ALL
    SELECT u.trace_id, u.device, false, m.device IS NOT NULL, m.device
    FROM used u
    LEFT JOIN only_model m USING (trace_id)
    WHERE NOT EXISTS (SELECT 1 FROM trace_devices d WHERE d.trace_id = u.trace_id AND d.device = u.device)
)
SELECT r.trace_id, r.device, r.listed, r.assumed, p.device_name, p.peak_device, p.matched_by,
       p.fp64_tflops, p.fp32_tflops, p.tf32_tflops, p.bf16_tflops, p.fp16_tflops, p.fp8_tflops, p.fp4_tflops,
       p.int8_tops, p.dram_gbps
FROM rows r
LEFT JOIN trace_devices p ON p.trace_id = r.trace_id AND p.device = r.entry;
