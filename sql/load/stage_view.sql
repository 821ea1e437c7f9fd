-- One trace's staged events as one relation, numbered in file order: the
-- union of its chunk tables (stage_events.sql numbers each chunk from 1), each
-- event_id shifted by the number of events in the chunks before it, so that
-- event_id is the event's position in traceEvents. validate.sql and
-- insert_events.sql read it.
-- Template: raw = the view's qualified name; chunks = [(table, offset)], the
-- chunk tables in file order with their offsets (integers the loader counted:
-- a view cannot take bound parameters); exact (boolean): the tables are
-- exact timestamps' (exact_ts.sql), not events'.
-- Columns: those of stage_events.sql, args whole again (no args_long); or
-- (exact) those of exact_ts.sql.
CREATE OR REPLACE VIEW {{ raw }} AS
{% for table, offset in chunks -%}
{% if not loop.first %}UNION ALL {% endif -%}
SELECT event_id + {{ offset | int }} AS event_id,
{%- if exact %} * EXCLUDE (event_id)
{%- else %} * EXCLUDE (event_id, args, args_long), coalesce(args, args_long) AS args
{%- endif %} FROM {{ table }}
{% endfor %}
