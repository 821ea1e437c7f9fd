-- The traces rows of one batch of loaded files, in one statement: one list
-- parameter per column, unnested side by side (a statement per row costs more
-- than the rest of a small trace's insert), each with its window: the
-- earliest start and the latest end of its complete events (ph X with a
-- duration >= 0), read from the events the batch inserted just before.
-- Parameters (lists of equal length, one entry per trace): trace_id, run,
-- rank, path, size_bytes, json_bytes, content_hash, loaded_at, base_time_ns,
-- schema_version, event_count, salvaged_bytes, metadata (JSON text); and
-- first_trace_id, last_trace_id (the batch's trace_ids, consecutive). The
-- columns of the traces table (sql/schema.sql).
INSERT INTO traces (trace_id, run, rank, path, size_bytes, json_bytes, content_hash, loaded_at, base_time_ns,
                    schema_version, event_count, salvaged_bytes, metadata, first_ts_ns, last_end_ns)
SELECT t.trace_id, t.run, t.rank, t.path, t.size_bytes, t.json_bytes, t.content_hash, t.loaded_at, t.base_time_ns,
       t.schema_version, t.event_count, t.salvaged_bytes, t.metadata, w.first_ts_ns, w.last_end_ns
FROM (SELECT unnest($trace_id) AS trace_id, unnest($run) AS run, unnest($rank) AS rank, unnest($path) AS path,
             unnest($size_bytes) AS size_bytes, unnest($json_bytes) AS json_bytes,
             unnest($content_hash) AS content_hash, unnest($loaded_at) AS loaded_at,
             unnest($base_time_ns) AS base_time_ns, unnest($schema_version) AS schema_version,
             unnest($event_count) AS event_count, unnest($salvaged_bytes) AS salvaged_bytes,
             unnest($metadata) AS metadata) t
LEFT JOIN (SELECT trace_id, min(ts_ns) AS first_ts_ns, max(end_ns) AS last_end_ns
           FROM events
           WHERE trace_id BETWEEN $first_trace_id AND $last_trace_id AND ph = 'X' AND dur_ns >= 0
           GROUP BY trace_id) w ON w.trace_id = t.trace_id
ORDER BY t.trace_id
