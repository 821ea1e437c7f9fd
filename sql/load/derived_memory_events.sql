-- The derived_memory_events rows of the traces in $trace_ids (INTEGER[]):
-- the memory_events view's rows, with the JSON args of every '[memory]'
-- instant parsed here once instead of at every query.
INSERT INTO derived_memory_events
SELECT trace_id, event_id, pid, tid, ts_ns,
       try_cast(json_extract_string(args, '$.Bytes') AS BIGINT) AS bytes,
       try_cast(json_extract_string(args, '$."Total Allocated"') AS BIGINT) AS total_allocated_bytes,
       try_cast(json_extract_string(args, '$."Total Reserved"') AS BIGINT) AS total_reserved_bytes,
       try_cast(json_extract_string(args, '$."Device Type"') AS INTEGER) AS device_type,
       try_cast(json_extract_string(args, '$."Device Id"') AS INTEGER) AS device_id,
       try_cast(json_extract_string(args, '$.Addr') AS BIGINT) AS addr
FROM events
WHERE cat = 'cpu_instant_event' AND name = '[memory]'
  AND trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, trace_id);
