-- memory_events: allocator events (profile_memory=True): '[memory]' instants.
--
-- requires: events
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
SELECT trace_id, event_id, pid, tid, ts_ns,
       try_cast(json_extract_string(args, '$.Bytes') AS BIGINT) AS bytes,
       try_cast(json_extract_string(args, '$."Total Allocated"') AS BIGINT) AS total_allocated_bytes,
       try_cast(json_extract_string(args, '$."Total Reserved"') AS BIGINT) AS total_reserved_bytes,
       try_cast(json_extract_string(args, '$."Device Type"') AS INTEGER) AS device_type,
       try_cast(json_extract_string(args, '$."Device Id"') AS INTEGER) AS device_id,
       try_cast(json_extract_string(args, '$.Addr') AS BIGINT) AS addr
FROM events
WHERE cat = 'cpu_instant_event' AND name = '[memory]';
