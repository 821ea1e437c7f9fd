-- kernels: one row per GPU kernel execution: Kineto's kernel events, and the
-- compute activity of other accelerators (MTIA's mtia_ccp_events other than DMA
-- transfers: the gpu_ops rows of kind 'kernel').
--
-- requires: events
--
-- Columns:
-- trace_id              INTEGER  trace this kernel belongs to (trace_files.trace_id)
-- event_id              BIGINT   events.event_id
-- name                  VARCHAR  kernel name
-- device                INTEGER  GPU index
-- stream                BIGINT   CUDA/HIP stream
-- ts_ns                 BIGINT   start, ns since the epoch
-- dur_ns                BIGINT   duration, ns
-- end_ns                BIGINT   ts_ns + dur_ns
-- correlation           BIGINT   links to the runtime call (runtime.correlation)
-- external_id           BIGINT   'External id' of the launching cpu_op
-- grid                  JSON     grid dimensions, e.g. [512,1,1]
-- block                 JSON     block dimensions
-- registers_per_thread  INTEGER  registers per thread
-- shared_memory_bytes   BIGINT   static + dynamic shared memory per block
-- blocks_per_sm         DOUBLE   Kineto's 'blocks per SM': grid blocks / the device's SMs
-- occupancy_pct         DOUBLE   Kineto's 'est. achieved occupancy %' (CUPTI's estimate from the launch
--                                configuration; NULL when not recorded)
-- args                  JSON     all args
{% from "templates/categories.sql" import device_cats, device_index, device_kind, sql_list %}
CREATE OR REPLACE VIEW kernels AS
SELECT trace_id, event_id, name, {{ device_index() }} AS device, coalesce(stream, tid) AS stream,
       ts_ns, dur_ns, end_ns, correlation, external_id,
       json_extract(args, '$.grid') AS grid,
       json_extract(args, '$.block') AS block,
       try_cast(json_extract_string(args, '$."registers per thread"') AS INTEGER) AS registers_per_thread,
       try_cast(json_extract_string(args, '$."shared memory"') AS BIGINT) AS shared_memory_bytes,
       try_cast(json_extract_string(args, '$."blocks per SM"') AS DOUBLE) AS blocks_per_sm,
       try_cast(json_extract_string(args, '$."est. achieved occupancy %"') AS DOUBLE) AS occupancy_pct,
       args
FROM events
WHERE ph = 'X' AND cat IN {{ sql_list(device_cats) }} AND {{ device_kind() }} = 'kernel';
