-- gpu_memcpy: one row per device memory copy.
-- trace_id, event_id, name (e.g. 'Memcpy HtoD (Pageable -> Device)'), device, stream,
-- ts_ns, dur_ns, end_ns, correlation, external_id  as in gpu_ops
-- bytes         BIGINT   bytes copied (args bytes)
-- gbps          DOUBLE   achieved bandwidth, GB/s (bytes / dur_ns)
-- args          JSON     all args
CREATE OR REPLACE VIEW gpu_memcpy AS
SELECT trace_id, event_id, name, device, stream, ts_ns, dur_ns, end_ns, correlation, external_id,
       try_cast(json_extract_string(args, '$.bytes') AS BIGINT) AS bytes,
       try_cast(json_extract_string(args, '$.bytes') AS BIGINT) / nullif(dur_ns, 0) AS gbps,
       args
FROM gpu_ops
WHERE kind = 'memcpy';
