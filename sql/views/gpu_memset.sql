-- gpu_memset: one row per device memset.
-- trace_id, event_id, name, device, stream, ts_ns, dur_ns, end_ns, correlation, external_id  as in gpu_ops
-- bytes         BIGINT   bytes set (args bytes)
-- args          JSON     all args
CREATE OR REPLACE VIEW gpu_memset AS
SELECT trace_id, event_id, name, device, stream, ts_ns, dur_ns, end_ns, correlation, external_id,
       try_cast(json_extract_string(args, '$.bytes') AS BIGINT) AS bytes,
       args
FROM gpu_ops
WHERE kind = 'memset';
