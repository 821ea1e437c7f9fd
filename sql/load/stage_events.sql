-- Stage 1 of loading: parse one chunk file of a trace's traceEvents array
-- (DuckDB's JSON reader, explicit columns) into a table of the in-memory
-- staging database, numbered in file order from 1; or (grouped) the events
-- of several small traces concatenated into one chunk, a marker event between
-- two traces (load._ChunkStager._stage_group; one file costs DuckDB's reader
-- ~2 ms less a trace than one file per trace), from which
-- stage_group_view.sql tells each event's trace. Grouped, the chunk is one
-- part of a group and its rows are added to the group's table
-- (stage_group_table.sql), which the other parts of the group fill too,
-- maybe at the same time.
-- Template: raw = the table's qualified name; grouped (boolean); part (grouped:
-- the chunk's index in its group); exact
-- (boolean, never with grouped: see below); long_args
-- (the length in bytes from which args go into args_long); max_object
-- (DuckDB's maximum_object_size: its parse buffer is twice that, and an
-- event must fit in the buffer; load._ChunkStager._read).
-- Parameter: files (VARCHAR[]: one chunk).
-- Columns: event_id (BIGINT, position in the chunk from 1; grouped: pos, the
-- position in the concatenated chunk, markers included, plus part x 2^32, so
-- that the positions of the group's parts follow each one another); ph, cat, name, pid,
-- tid, id (VARCHAR, as written); ts, dur (DOUBLE, microseconds as written);
-- args (JSON; NULL when long: see args_long), args_long (JSON: args of
-- STAGED_LONG_ARGS bytes or more, else NULL). Read both through the views
-- (stage_view.sql, stage_group_view.sql), which give args whole again.
-- exact: a chunk that looks like fractional absolute microseconds (load.py,
-- _ChunkStager._stage) reads ts as DECIMAL(38, 9), which DuckDB's reader takes
-- from the number's text, exactly, and adds exact_ns (BIGINT: ns of that text,
-- rounded half away from zero; exact_ts.sql's values without a second read of
-- the chunk, which exact_ts.sql staged moves out). ts stays the DOUBLE the
-- text parses to: the decimal's text, which has every digit of a text of at
-- most 9 decimals, parsed again. The usual decimal text (3 decimals, then
-- 000000) gives exact_ns by its digits, an integer cast, much cheaper than
-- the DECIMAL arithmetic that takes every other one (and fails out of
-- BIGINT's range, as exact_ts.sql does).
-- Numbering in file order (WITH ORDINALITY) makes DuckDB read the files on
-- one thread, one after another: the loader parses chunks (and groups) side by
-- side on separate cursors and adds each chunk's offset afterwards
-- (duckprof/load.py, _ChunkStager). This is also the validation: malformed
-- JSON (and a value of the wrong type for any column the insert reads) fails
-- here, before the database's own tables are touched.
-- Why long args get a column of their own: DuckDB keeps a string of 4 KB or
-- more outside its column segment, in an overflow block of 256 KB that the
-- segment starts for it; a segment of args holds ~1,500 events, so a trace
-- with a few long args among many short ones (the NCCL kernels' "Process
-- Group Ranks" of a big job) starts a block for nearly every segment and
-- fills a fraction of it, and the staged events outgrow the load's memory
-- limit. In a column of their own the long args share few segments, and
-- their blocks fill up.
{% from "load/read_chunk.sql" import read_chunk, exact_ns %}
{% if grouped -%}
INSERT INTO {{ raw }} BY NAME
{%- else -%}
CREATE OR REPLACE TABLE {{ raw }} AS
{%- endif %}
{% if exact -%}
SELECT * EXCLUDE (txt) REPLACE (txt::DOUBLE AS ts),
       {{ exact_ns('ts', 'txt') }} AS exact_ns
FROM (
    SELECT ordinality AS event_id, ph, cat, name, pid, tid, ts, ts::VARCHAR AS txt,
{%- else %}
SELECT {% if grouped %}ordinality + {{ (part | int) * 4294967296 }} AS pos{% else %}ordinality AS event_id{% endif %},
       ph, cat, name, pid, tid, ts,
{%- endif %} dur, id,
       CASE WHEN strlen(args) < {{ long_args | int }} THEN args END AS args,
       CASE WHEN strlen(args) >= {{ long_args | int }} THEN args END AS args_long
FROM {{ read_chunk(max_object, 'DECIMAL(38, 9)' if exact else 'DOUBLE') }}
{%- if exact %}
){%- endif %}
