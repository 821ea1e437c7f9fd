-- Check staged events (stage_events.sql) before anything is written to the
-- database's tables: one trace's view over its staged chunk tables, or the
-- staged table of a group of small traces, per file. Template: raw; grouped
-- (boolean: raw is a group's table, with src and pos).
-- Returns one row per file with events (src INTEGER: the file's index in
-- the group, 0 for one trace): events (BIGINT, events in the trace), first
-- (BIGINT, the number of its first event: 1, or its pos in a group),
-- bad_time (BIGINT, events whose ts/dur is not a usable number: NaN, inf, or
-- beyond +-9e15 us, which would overflow integer nanoseconds) and bad_name
-- (VARCHAR, the first such event's name). A trace without events has no row.
{%- set order = 'pos' if grouped else 'event_id' %}
SELECT {{ 'src' if grouped else '0' }} AS src,
       count(*) AS events,
       min({{ order }}) AS first,
       count_if(NOT (ts IS NULL OR (isfinite(ts) AND abs(ts) < 9e15))
             OR NOT (dur IS NULL OR (isfinite(dur) AND abs(dur) < 9e15))) AS bad_time,
       arg_min(name, {{ order }}) FILTER (WHERE NOT (ts IS NULL OR (isfinite(ts) AND abs(ts) < 9e15))
                              OR NOT (dur IS NULL OR (isfinite(dur) AND abs(dur) < 9e15))) AS bad_name
FROM {{ raw }}
GROUP BY ALL
ORDER BY src
