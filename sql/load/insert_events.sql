-- Stage 2 of loading: the events of one batch of staged traces (one trace,
-- or several small ones: one statement for many files costs far less than one
-- each) into `events`, normalised (normalize.sql) and with their nesting
-- (nesting.sql, computed before the transaction into the staging table nest).
-- Template: raws, exact (see normalize.sql), nest (the batch's nesting table;
-- none: the nesting columns stay NULL, filled at first use by
-- nesting_update.sql). Parameters: first_trace_id, base_ns (see normalize.sql).
{% from "load/normalize.sql" import normalized_events %}
INSERT INTO events BY NAME
{%- if nest is none %}
SELECT * FROM ({{ normalized_events(raws, exact) }})
{%- else %}
SELECT e.*, n.parent_event_id, n.depth, n.self_ns, n.op_event_id
FROM ({{ normalized_events(raws, exact) }}) e
LEFT JOIN {{ nest }} n ON n.trace_id = e.trace_id AND n.event_id = e.event_id
{%- endif %}
