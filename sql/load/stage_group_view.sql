-- The staged events of a group of small traces (stage_events.sql, grouped:
-- their events concatenated into one chunk, a marker event between two
-- traces) as one relation with each event numbered in its own file: event_id
-- = its position in its traceEvents, as stage_view.sql gives a single trace.
-- Template: raw = the view's qualified name; table = the group's staged
-- table; starts = per segment (the events between two markers, in order) the
-- pos before its first event: per part of the group (stage_events.sql
-- grouped), part x 2^32, then each of its markers' pos (group_markers.sql);
-- srcs = per segment the file's index in the group (a file without events
-- has no segment). Integers the loader read: a view cannot take bound
-- parameters. A row's segment is the number of markers at or before its pos,
-- found by a balanced tree of comparisons (log2 of the group's files per
-- row); the markers themselves are no longer in the table (group_markers.sql
-- deleted them).
-- Columns: src INTEGER (the file's index in the group), then those of
-- stage_events.sql, args whole again (no args_long).
{%- macro segment(lo, hi) -%}
{%- if lo == hi -%}{{ lo | int }}
{%- else -%}{%- set mid = (lo + hi + 1) // 2 -%}
CASE WHEN pos < {{ starts[mid] | int }} THEN {{ segment(lo, mid - 1) }} ELSE {{ segment(mid, hi) }} END
{%- endif -%}
{%- endmacro %}
CREATE OR REPLACE VIEW {{ raw }} AS
SELECT CAST([{% for s in srcs %}{{ s | int }}{% if not loop.last %}, {% endif %}{% endfor %}] AS INTEGER[])[seg + 1]
           AS src,
       pos - CAST([{% for s in starts %}{{ s | int }}{% if not loop.last %}, {% endif %}{% endfor %}] AS BIGINT[])[seg + 1]
           AS event_id,
       * EXCLUDE (seg, pos, args, args_long),
       coalesce(args, args_long) AS args
FROM (SELECT {{ segment(0, starts | length - 1) }}::INTEGER AS seg, * FROM {{ table }})
