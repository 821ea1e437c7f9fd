-- flows: one row per flow arrow (ph 's' start matched with its 'f'/'t' end on
-- the same id).
--
-- requires: events
--
-- Columns:
-- trace_id      INTEGER  trace
-- cat           VARCHAR  'ac2g' (launch -> device), 'fwdbwd' (forward op -> backward op), ...
-- flow_id       VARCHAR  the flow's id (for ac2g: the correlation id)
-- src_event_id  BIGINT   events.event_id of the 's' event
-- src_pid       BIGINT   its process
-- src_tid       BIGINT   its thread
-- src_ts_ns     BIGINT   where the arrow starts, ns since the epoch
-- dst_event_id  BIGINT   events.event_id of the 'f' (or 't') event
-- dst_pid       BIGINT   its process
-- dst_tid       BIGINT   its thread
-- dst_ts_ns     BIGINT   where the arrow ends, ns since the epoch
CREATE OR REPLACE VIEW flows AS
SELECT s.trace_id, s.cat, s.flow_id,
       s.event_id AS src_event_id, s.pid AS src_pid, s.tid AS src_tid, s.ts_ns AS src_ts_ns,
       f.event_id AS dst_event_id, f.pid AS dst_pid, f.tid AS dst_tid, f.ts_ns AS dst_ts_ns
FROM events s
JOIN events f ON f.trace_id = s.trace_id AND f.cat = s.cat AND f.flow_id = s.flow_id
             AND f.ph IN ('f', 't')
WHERE s.ph = 's';
