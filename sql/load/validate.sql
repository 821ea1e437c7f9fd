-- Check staged events (stage_events.sql) before anything is written to the
-- database's tables: one trace's view over its staged chunk tables, or the
-- view of a group of small traces (stage_group_view.sql), per file.
-- Template: raw; grouped (boolean: raw is a group's view, with src); whole
-- (boolean: raw is a group's staged table, stage_group_table.sql, its markers
-- taken out: one row for all its events, whatever their file, src 0 and
-- bad_name NULL: the loader counts each file's events from the markers, and
-- reads this again per file, grouped, only when an event is bad).
-- Returns one row per file with events (src INTEGER: the file's index in
-- the group, 0 for one trace): events (BIGINT, events in the trace),
-- bad_time (BIGINT, events whose ts/dur is not a usable number: NaN, inf, or
-- beyond +-9e15 us, which would overflow integer nanoseconds; or a timed
-- event, any phase but metadata 'M', without a ts: it has no place on the
-- timeline, and every report that places it would show or compute NULLs) and
-- bad_name (VARCHAR, the first such event's name). A trace without events has
-- no row.
SELECT {{ 'src' if grouped else '0' }} AS src,
       count(*) AS events,
       count_if(bad) AS bad_time,
       {% if whole %}NULL::VARCHAR{% else %}arg_min(name, event_id) FILTER (WHERE bad){% endif %} AS bad_name
FROM (SELECT *, NOT (ts IS NULL OR (isfinite(ts) AND abs(ts) < 9e15))
                OR NOT (dur IS NULL OR (isfinite(dur) AND abs(dur) < 9e15))
                OR (ts IS NULL AND ph <> 'M') AS bad
      FROM {{ raw }})
{%- if not whole %}
GROUP BY ALL
ORDER BY src
{%- endif %}
