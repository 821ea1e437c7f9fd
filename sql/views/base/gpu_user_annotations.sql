-- gpu_user_annotations: the device-side span of record_function ranges
-- (Kineto gpu_user_annotation).
--
-- requires: events
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   events.event_id
-- name         VARCHAR  the label
-- device       INTEGER  GPU index
-- stream       BIGINT   stream
-- ts_ns        BIGINT   start, ns since the epoch
-- dur_ns       BIGINT   duration, ns
-- end_ns       BIGINT   ts_ns + dur_ns
-- external_id  BIGINT   'External id'
-- args         JSON     all args
{% from "templates/categories.sql" import device_index %}
CREATE OR REPLACE VIEW gpu_user_annotations AS
SELECT trace_id, event_id, name, {{ device_index() }} AS device,
       coalesce(stream, tid) AS stream, ts_ns, dur_ns, end_ns, external_id, args
FROM events
WHERE ph = 'X' AND cat = 'gpu_user_annotation';
