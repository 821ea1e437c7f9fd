-- Before nesting.sql's crossing pass: delete the first pass's rows of the
-- threads it redoes. Parameters: first_trace_id, last_trace_id, threads
-- (UBIGINT[] of thread_key.sql, from nesting_check.sql).
{% from "templates/thread_key.sql" import thread_key %}
DELETE FROM nesting AS n
USING events AS e
WHERE n.trace_id BETWEEN $first_trace_id AND $last_trace_id
  AND e.trace_id = n.trace_id AND e.event_id = n.event_id
  AND list_contains(CAST($threads AS UBIGINT[]), {{ thread_key("e.") }})
