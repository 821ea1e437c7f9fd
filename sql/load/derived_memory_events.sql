-- The derived_memory_events rows of the traces in $trace_ids (INTEGER[]):
-- the memory_events view's rows, with the JSON args of every '[memory]'
-- instant parsed here once instead of at every query (each event's args once,
-- for all six keys).
INSERT INTO derived_memory_events
SELECT trace_id, event_id, pid, tid, ts_ns,
       try_cast(a[1] AS BIGINT) AS bytes,
       try_cast(a[2] AS BIGINT) AS total_allocated_bytes,
       try_cast(a[3] AS BIGINT) AS total_reserved_bytes,
       try_cast(a[4] AS INTEGER) AS device_type,
       try_cast(a[5] AS INTEGER) AS device_id,
       try_cast(a[6] AS BIGINT) AS addr
FROM (SELECT trace_id, event_id, pid, tid, ts_ns,
             json_extract_string(args, ['$.Bytes', '$."Total Allocated"', '$."Total Reserved"', '$."Device Type"',
                                        '$."Device Id"', '$.Addr']) AS a
      FROM events
      WHERE cat = 'cpu_instant_event' AND name = '[memory]'
        AND trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, trace_id));
