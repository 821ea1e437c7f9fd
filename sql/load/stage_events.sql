-- Stage 1 of loading: parse one chunk file of a trace's traceEvents array
-- (DuckDB's JSON reader, explicit columns) into a table of the in-memory
-- staging database, numbered in file order from 1; or (grouped) the events
-- of several small traces concatenated into one chunk, a marker event between
-- two traces (load._ChunkStager._stage_group; one file costs DuckDB's reader
-- ~2 ms less a trace than one file per trace), from which
-- stage_group_view.sql tells each event's trace.
-- Template: raw = the table's qualified name; grouped (boolean).
-- Parameter: files (VARCHAR[]: one chunk).
-- Columns: event_id (BIGINT, position in the chunk from 1; grouped: pos, the
-- position in the concatenated chunk, markers included); ph, cat, name, pid,
-- tid, id (VARCHAR, as written); ts, dur (DOUBLE, microseconds as written);
-- args (JSON).
-- Numbering in file order (WITH ORDINALITY) makes DuckDB read the files on
-- one thread, one after another: the loader parses chunks (and groups) side by
-- side on separate cursors and adds each chunk's offset afterwards
-- (duckprof/load.py, _ChunkStager). This is also the validation: malformed
-- JSON (and a value of the wrong type for any column the insert reads) fails
-- here, before the database's own tables are touched.
CREATE OR REPLACE TABLE {{ raw }} AS
SELECT ordinality AS {{ 'pos' if grouped else 'event_id' }},
       ph, cat, name, pid, tid, ts, dur, id, args
FROM read_json($files, format = 'array', maximum_object_size = 33554432,
               columns = {ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR',
                          pid: 'VARCHAR', tid: 'VARCHAR', ts: 'DOUBLE', dur: 'DOUBLE',
                          id: 'VARCHAR', args: 'JSON'}) WITH ORDINALITY
