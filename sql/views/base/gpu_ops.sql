-- gpu_ops: all device activity: kernels, memcpys and memsets, of every vendor.
-- Accelerator activity that Kineto does not file as kernel / gpu_memcpy /
-- gpu_memset (MTIA's mtia_ccp_events) gets its kind from its name: DMA
-- transfers (dma*, Memcpy*, Memset*) are memcpys / memsets, all other device
-- work (pe_exe, merge, event_wait, ...) is a kernel (sql/templates/categories.sql,
-- device_kind), as HTA counts it as computation.
--
-- requires: events
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   events.event_id
-- kind         VARCHAR  'kernel', 'memcpy' or 'memset'
-- name         VARCHAR  kernel name or memcpy/memset kind
-- device       INTEGER  GPU index (args device; for 2021 traces the GPU pid)
-- stream       BIGINT   CUDA/HIP stream
-- ts_ns        BIGINT   start, ns since the epoch
-- dur_ns       BIGINT   duration, ns
-- end_ns       BIGINT   ts_ns + dur_ns
-- correlation  BIGINT   links to the runtime call that launched it
-- external_id  BIGINT   'External id' of the launching cpu_op
-- args         JSON     all args
{% from "templates/categories.sql" import device_cats, device_index, device_kind, sql_list %}
CREATE OR REPLACE VIEW gpu_ops AS
SELECT trace_id, event_id,
       {{ device_kind() }} AS kind,
       name, {{ device_index() }} AS device, coalesce(stream, tid) AS stream,
       ts_ns, dur_ns, end_ns, correlation, external_id, args
FROM events
WHERE ph = 'X' AND cat IN {{ sql_list(device_cats) }};
