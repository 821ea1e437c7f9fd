-- The staged events of a group of small traces (stage_events.sql, grouped) as
-- one relation with each event numbered in its own file: event_id = its
-- position in its traceEvents, as stage_view.sql gives a single trace.
-- Template: raw = the view's qualified name; table = the group's staged
-- table; offsets = per file (in src order) the pos of its first event minus
-- one (integers the loader read with validate.sql: a view cannot take bound
-- parameters).
-- Columns: src INTEGER (the file's index in the group), then those of
-- stage_events.sql.
CREATE OR REPLACE VIEW {{ raw }} AS
SELECT src, pos - CAST([{% for o in offsets %}{{ o | int }}{% if not loop.last %}, {% endif %}{% endfor %}] AS BIGINT[])[src + 1]
           AS event_id,
       * EXCLUDE (src, pos)
FROM {{ table }}
