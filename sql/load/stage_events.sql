-- Stage 1 of loading one trace: parse its events (the chunk files of its
-- traceEvents array, read by DuckDB's JSON reader with explicit columns) into
-- a TEMP table, numbered in file order. Template: raw = the temp table's name.
-- Parameter: files (VARCHAR[]).
-- Numbering in file order (WITH ORDINALITY) makes DuckDB run the scan on one
-- thread; doing only the parse here and the heavy normalisation in
-- insert_events.sql (a parallel scan of this table) is ~35% faster on 1 GB than
-- numbering inside the insert. It is also the validation: malformed JSON (and
-- a value of the wrong type for any column the insert reads) fails here,
-- before the database's own tables are touched.
CREATE OR REPLACE TEMP TABLE {{ raw }} AS
SELECT ordinality AS event_id, ph, cat, name, pid, tid, ts, dur, id, args
FROM read_json($files, format = 'array', maximum_object_size = 33554432,
               columns = {ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR',
                          pid: 'VARCHAR', tid: 'VARCHAR', ts: 'DOUBLE', dur: 'DOUBLE',
                          id: 'VARCHAR', args: 'JSON'}) WITH ORDINALITY
