-- The devices rows of one batch of loaded files (one per deviceProperties
-- entry), in one statement: one list parameter per column, unnested side by
-- side, as insert_traces.sql does.
-- Parameters (lists of equal length, one entry per device): trace_id, device,
-- name, total_global_mem_bytes, compute_major, compute_minor, num_sms,
-- properties (JSON text); the columns of the devices table (sql/schema.sql).
INSERT INTO devices (trace_id, device, name, total_global_mem_bytes, compute_major, compute_minor, num_sms,
                     properties)
SELECT unnest($trace_id), unnest($device), unnest($name), unnest($total_global_mem_bytes),
       unnest($compute_major), unnest($compute_minor), unnest($num_sms), unnest($properties)
