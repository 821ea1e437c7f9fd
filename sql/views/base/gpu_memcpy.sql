-- gpu_memcpy: one row per device memory copy.
--
-- requires: events
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   events.event_id
-- name         VARCHAR  e.g. 'Memcpy HtoD (Pageable -> Device)'
-- device       INTEGER  GPU index
-- stream       BIGINT   stream
-- ts_ns        BIGINT   start, ns since the epoch
-- dur_ns       BIGINT   duration, ns
-- end_ns       BIGINT   ts_ns + dur_ns
-- correlation  BIGINT   links to the runtime call
-- external_id  BIGINT   'External id' of the launching cpu_op
-- bytes        BIGINT   bytes copied (args bytes)
-- gbps         DOUBLE   achieved bandwidth, GB/s (bytes / dur_ns)
-- args         JSON     all args
{% from "templates/categories.sql" import device_index %}
CREATE OR REPLACE VIEW gpu_memcpy AS
SELECT trace_id, event_id, name, {{ device_index() }} AS device, coalesce(stream, tid) AS stream,
       ts_ns, dur_ns, end_ns, correlation, external_id,
       try_cast(json_extract_string(args, '$.bytes') AS BIGINT) AS bytes,
       try_cast(json_extract_string(args, '$.bytes') AS BIGINT) / nullif(dur_ns, 0) AS gbps,
       args
FROM events
WHERE ph = 'X' AND cat = 'gpu_memcpy';
