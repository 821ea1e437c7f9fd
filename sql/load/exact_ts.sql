-- Exact timestamps for traces with fractional *absolute* microseconds (no
-- baseTimeNanoseconds, ts ~1.7e15 us with 3 decimals: some 2023 Kineto
-- versions). DuckDB parses numbers as DOUBLE, whose ulp at 1.7e15 is 0.25 us,
-- so the double can be off by up to 0.125 us there, enough to turn a sibling
-- that starts where another ends into its child. This reads ts again from the
-- raw text of each event, exactly, into the staging table {{ table }}
-- (event_id BIGINT, exact_ns BIGINT: ns since the epoch), which normalize.sql
-- uses instead of the double (when within 1 us of it: a "ts" key inside args
-- written before the event's own is not taken).
-- Template: table; staged (boolean); raw (with staged: the chunk's staged
-- table); max_object (as in stage_events.sql).
-- staged: the chunk was parsed with exact (stage_events.sql): its table raw
-- holds exact_ns already, moved out here (the loader then drops the column),
-- without reading the chunk again. Otherwise the chunk's text is read again:
-- Parameter: files (one chunk file of the trace's traceEvents: event_id =
-- position in the chunk, shifted like the chunk's events by stage_view.sql).
-- Run by the loader right after the chunk is parsed (the same file: no second
-- read of the trace), only when such timestamps are present
-- (exact_ts_needed.sql).
-- The usual text has exactly 3 decimals and no exponent ("1712345678901234.567"):
-- its ns are its digits without the point, an integer cast, cheaper than
-- the DECIMAL one, which takes every other text (and one out of BIGINT's range,
-- so that it fails as before).
CREATE OR REPLACE TABLE {{ table }} AS
{% if staged -%}
SELECT event_id, exact_ns FROM {{ raw }} WHERE exact_ns IS NOT NULL
{%- else -%}
SELECT event_id,
       coalesce(CASE WHEN strpos(txt, '.') = strlen(txt) - 3 AND strpos(txt, 'e') = 0 AND strpos(txt, 'E') = 0
                     THEN try_cast(replace(txt, '.', '') AS BIGINT) END,
                round(try_cast(txt AS DECIMAL(38, 9)) * 1000)::BIGINT) AS exact_ns
FROM (
    SELECT row_number() OVER () AS event_id,
           regexp_extract(json, '"ts"\s*:\s*(-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)', 1) AS txt
    FROM read_json_objects($files, format = 'array', maximum_object_size = {{ max_object | int }})
)
WHERE txt <> ''
{%- endif %}
