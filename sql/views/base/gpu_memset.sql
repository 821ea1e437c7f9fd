-- gpu_memset: one row per device memset.
--
-- requires: events
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   events.event_id
-- name         VARCHAR  e.g. 'Memset (Device)'
-- device       INTEGER  GPU index
-- stream       BIGINT   stream
-- ts_ns        BIGINT   start, ns since the epoch
-- dur_ns       BIGINT   duration, ns
-- end_ns       BIGINT   ts_ns + dur_ns
-- correlation  BIGINT   links to the runtime call
-- external_id  BIGINT   'External id' of the launching cpu_op
-- bytes        BIGINT   bytes set (args bytes)
-- args         JSON     all args
{% from "templates/categories.sql" import device_index %}
CREATE OR REPLACE VIEW gpu_memset AS
SELECT trace_id, event_id, name, {{ device_index() }} AS device, coalesce(stream, tid) AS stream,
       ts_ns, dur_ns, end_ns, correlation, external_id,
       try_cast(json_extract_string(args, '$.bytes') AS BIGINT) AS bytes,
       args
FROM events
WHERE ph = 'X' AND cat = 'gpu_memset';
