-- Check one trace's staged events (stage_events.sql) before anything is
-- written to the database's tables. Template: raw = its view over the staged
-- chunk tables.
-- Returns events (BIGINT, events in the trace), bad_time (BIGINT, events whose
-- ts/dur is not a usable number: NaN, inf, or beyond +-9e15 us, which would
-- overflow integer nanoseconds) and bad_name (VARCHAR, the first such event's
-- name).
SELECT count(*) AS events,
       count_if(NOT (ts IS NULL OR (isfinite(ts) AND abs(ts) < 9e15))
             OR NOT (dur IS NULL OR (isfinite(dur) AND abs(dur) < 9e15))) AS bad_time,
       arg_min(name, event_id) FILTER (WHERE NOT (ts IS NULL OR (isfinite(ts) AND abs(ts) < 9e15))
                              OR NOT (dur IS NULL OR (isfinite(dur) AND abs(dur) < 9e15))) AS bad_name
FROM {{ raw }}
