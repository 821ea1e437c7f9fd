-- memory_events: allocator events (profile_memory=True): '[memory]' instants.
--
-- The JSON args are parsed once per trace at load
-- (sql/load/derived_memory_events.sql) and stored in the table
-- derived_memory_events, which this view reads.
--
-- requires: derived_memory_events
--
-- Columns:
-- trace_id               INTEGER  trace
-- event_id               BIGINT   events.event_id
-- pid                    BIGINT   host process
-- tid                    BIGINT   host thread
-- ts_ns                  BIGINT   when, ns since the epoch
-- bytes                  BIGINT   allocated (positive) or freed (negative) bytes
-- total_allocated_bytes  BIGINT   allocator total after the event (newer traces)
-- total_reserved_bytes   BIGINT   allocator reserved total after the event
-- device_type            INTEGER  0 CPU, 1 CUDA, ... (c10::DeviceType)
-- device_id              INTEGER  -1 for CPU
-- addr                   BIGINT   address
CREATE OR REPLACE VIEW memory_events AS
SELECT trace_id, event_id, pid, tid, ts_ns, bytes, total_allocated_bytes, total_reserved_bytes,
       device_type, device_id, addr
FROM derived_memory_events;
