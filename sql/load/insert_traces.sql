-- The traces rows of one batch of loaded files, in one statement: one list
-- parameter per column, unnested side by side (a statement per row costs more
-- than the rest of a small trace's insert).
-- Parameters (lists of equal length, one entry per trace): trace_id, run,
-- rank, path, size_bytes, json_bytes, content_hash, loaded_at, base_time_ns,
-- schema_version, event_count, salvaged_bytes, metadata (JSON text),
-- first_ts_ns, last_end_ns (trace_windows.sql); the
-- columns of the traces table (sql/schema.sql).
INSERT INTO traces (trace_id, run, rank, path, size_bytes, json_bytes, content_hash, loaded_at, base_time_ns,
                    schema_version, event_count, salvaged_bytes, metadata, first_ts_ns, last_end_ns)
SELECT unnest($trace_id), unnest($run), unnest($rank), unnest($path), unnest($size_bytes), unnest($json_bytes),
       unnest($content_hash), unnest($loaded_at), unnest($base_time_ns), unnest($schema_version),
       unnest($event_count), unnest($salvaged_bytes), unnest($metadata), unnest($first_ts_ns),
       unnest($last_end_ns)
