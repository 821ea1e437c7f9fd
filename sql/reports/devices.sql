-- devices: the devices of each trace: its deviceProperties entries and the
-- devices with activity, with the datasheet peaks they matched (trace_devices).
-- question: Which GPUs did each trace use, and what are their datasheet peaks?
--
-- One row per device that has a deviceProperties entry or device activity
-- (kernels, memcpys, memsets): a trace often lists every GPU of the node and
-- uses one. Peaks come from the device_peaks row the name (or, failing that,
-- the memory size and SM/CU count) matched; NULL when none did. A device with
-- activity but no deviceProperties entry (ROCm lists the GPUs it sees from id
-- 0 and runs on device 2) gets the peaks of the trace's only device model, as
-- in the kernels report (gpu_devices; a note says so).
--
-- uses: device
-- requires: trace_devices, gpu_devices, trace_files, gpu_ops
--
-- Columns:
-- run           VARCHAR  run label
-- rank          INTEGER  rank of the trace
-- trace_id      INTEGER  trace
-- device        INTEGER  device index
-- device_name   VARCHAR  deviceProperties name (NULL: no entry for this device)
-- num_sms       INTEGER  [wide]  SMs / compute units
-- memory_bytes  BIGINT   total device memory, bytes
-- gpu_events    BIGINT   device events on it: kernels, memcpys, memsets (0: idle or unused)
-- peak_device   VARCHAR  the datasheet model matched (NULL: none; for a device without an entry: the assumed one)
-- fp32_tflops   DOUBLE  [wide]  dense fp32 peak, TFLOP/s
-- tf32_tflops   DOUBLE  [wide]  dense tf32 peak, TFLOP/s
-- bf16_tflops   DOUBLE   dense bf16 peak, TFLOP/s
-- fp16_tflops   DOUBLE  [wide]  dense fp16 peak, TFLOP/s
-- fp8_tflops    DOUBLE  [wide]  dense fp8 peak, TFLOP/s
-- dram_gbps     DOUBLE   DRAM bandwidth peak, GB/s
{% from "templates/scope.sql" import run_scope, device_scope with context %}
WITH f AS (
    SELECT trace_id, run, rank FROM trace_files WHERE TRUE {{ run_scope() }}
),
used AS (
    SELECT trace_id, device, count(*) AS gpu_events FROM gpu_ops
    WHERE trace_id IN (SELECT trace_id FROM f) AND kind IN ('kernel', 'memcpy', 'memset')
    GROUP BY trace_id, device
),
d AS (
    SELECT coalesce(p.trace_id, u.trace_id) AS trace_id, coalesce(p.device, u.device) AS device,
           p.device_name, p.num_sms, p.total_global_mem_bytes AS memory_bytes,
           coalesce(u.gpu_events, 0) AS gpu_events, g.peak_device,
           g.fp32_tflops, g.tf32_tflops, g.bf16_tflops, g.fp16_tflops, g.fp8_tflops, g.dram_gbps
    FROM (SELECT * FROM trace_devices WHERE trace_id IN (SELECT trace_id FROM f)) p
    FULL JOIN used u ON u.trace_id = p.trace_id AND u.device = p.device
    -- the peaks: the entry's own, or the only model's for a device without one
    LEFT JOIN gpu_devices g ON g.trace_id = coalesce(p.trace_id, u.trace_id)
                           AND g.device = coalesce(p.device, u.device)
)
SELECT f.run, f.rank, d.*
FROM d JOIN f USING (trace_id)
WHERE TRUE {{ device_scope('d.') }}
ORDER BY f.run, f.rank NULLS LAST, d.trace_id, d.device

-- @notes
WITH f AS (SELECT trace_id, file_name FROM trace_files WHERE TRUE {{ run_scope() }})
SELECT note, instead FROM (
    SELECT 0 AS k, trace_id, file_name || ': no deviceProperties and no device activity in this trace' AS note,
           false AS instead
    FROM f WHERE NOT EXISTS (SELECT 1 FROM {{ result }} r WHERE r.trace_id = f.trace_id)
      AND EXISTS (SELECT 1 FROM {{ result }})
    UNION ALL
    SELECT DISTINCT 0, g.trace_id, f.file_name || ': device ' || g.device || ' is not in the trace''s '
           || 'deviceProperties; it gets the peaks of the only device model they name, '''
           || coalesce(g.device_name, '') || '''', false
    FROM gpu_devices g JOIN f USING (trace_id)
    WHERE g.assumed AND EXISTS (SELECT 1 FROM {{ result }} r WHERE r.trace_id = g.trace_id AND r.device = g.device)
    UNION ALL
    SELECT 1, NULL, 'no devices: no deviceProperties and no device activity'
                    {%- if device is not none %} || ' (device ' || $device || ')'{% endif %}, true
    WHERE NOT EXISTS (SELECT 1 FROM {{ result }})
)
ORDER BY k, trace_id
