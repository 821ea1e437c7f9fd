-- Threads whose nesting needs the crossing pass of nesting.sql: those where
-- the first pass marked an event (depth -1) because its parent is itself or
-- does not contain it (see nesting.sql). Parameters: first_trace_id,
-- last_trace_id. Returns thread (UBIGINT, thread_key.sql), none for
-- properly nested traces.
{% from "templates/thread_key.sql" import thread_key %}
SELECT DISTINCT {{ thread_key("e.") }} AS thread
FROM nesting n
JOIN events e ON e.trace_id = n.trace_id AND e.event_id = n.event_id
WHERE n.trace_id BETWEEN $first_trace_id AND $last_trace_id AND n.depth < 0
