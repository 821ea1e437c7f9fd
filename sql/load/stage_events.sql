-- Stage 1 of loading: parse one chunk file of a trace's traceEvents array
-- (DuckDB's JSON reader, explicit columns) into a table of the in-memory
-- staging database, numbered in file order from 1; or (grouped) the single
-- chunks of several small traces in one statement, each event tagged with its
-- file. Template: raw = the table's qualified name; grouped (boolean).
-- Parameter: files (VARCHAR[]: one chunk; grouped: one chunk per trace).
-- Columns: event_id (BIGINT, position in the chunk from 1; grouped: src
-- INTEGER, the file's index in files, and pos BIGINT, the position in the
-- files read one after another, from which stage_group_view.sql makes
-- event_id); ph, cat, name, pid, tid, id (VARCHAR, as written); ts, dur
-- (DOUBLE, microseconds as written); args (JSON).
-- Numbering in file order (WITH ORDINALITY) makes DuckDB read the files on
-- one thread, one after another: the loader parses chunks (and groups) side by
-- side on separate cursors and adds each chunk's offset afterwards
-- (duckprof/load.py, _ChunkStager). This is also the validation: malformed
-- JSON (and a value of the wrong type for any column the insert reads) fails
-- here, before the database's own tables are touched.
CREATE OR REPLACE TABLE {{ raw }} AS
SELECT {% if grouped %}file_index::INTEGER AS src, ordinality AS pos{% else %}ordinality AS event_id{% endif %},
       ph, cat, name, pid, tid, ts, dur, id, args
FROM read_json($files, format = 'array', maximum_object_size = 33554432,
               columns = {ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR',
                          pid: 'VARCHAR', tid: 'VARCHAR', ts: 'DOUBLE', dur: 'DOUBLE',
                          id: 'VARCHAR', args: 'JSON'}) WITH ORDINALITY
