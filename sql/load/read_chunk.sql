-- read_chunk(max_object, ts): DuckDB's JSON reader over one chunk file (the
-- bound parameter $files: one file holding a JSON array of trace events),
-- numbered in file order from 1 (column ordinality), with the columns a load
-- reads as written: ph, cat, name, pid, tid, id (VARCHAR), ts (the type `ts`:
-- DOUBLE, or DECIMAL(38, 9) for exact fractional absolute microseconds),
-- dur (DOUBLE), args (JSON). Written once for the two statements that read
-- chunks: stage_events.sql (into a staging table) and normalize.sql (a
-- chunk inserted straight into events: load.Loader._insert).
-- max_object: DuckDB's maximum_object_size (see stage_events.sql).
--
-- exact_ns(ts, txt): the ns of a ts read as DECIMAL(38, 9), whose text is txt
-- (ts::VARCHAR), rounded half away from zero: the usual text (3 decimals, then
-- 000000) by its digits, an integer cast, much cheaper than the DECIMAL
-- arithmetic that takes every other one (and fails out of BIGINT's range).
{% macro read_chunk(max_object, ts='DOUBLE') -%}
read_json($files, format = 'array', maximum_object_size = {{ max_object | int }},
               columns = {ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR',
                          pid: 'VARCHAR', tid: 'VARCHAR', ts: '{{ ts }}',
                          dur: 'DOUBLE', id: 'VARCHAR', args: 'JSON'}) WITH ORDINALITY
{%- endmacro %}

{% macro exact_ns(ts, txt) -%}
coalesce(CASE WHEN ends_with({{ txt }}, '000000') THEN try_cast(replace(left({{ txt }}, -6), '.', '') AS BIGINT) END,
                round({{ ts }} * 1000)::BIGINT)
{%- endmacro %}
