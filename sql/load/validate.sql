-- Check one trace's events before anything is written to the database.
-- Parameter: files (VARCHAR[]) = the chunk files of its traceEvents array.
-- A full streaming parse (nothing is materialised): malformed JSON raises here,
-- where the loader can still retry or report it, instead of in the middle of
-- the insert transaction. Returns the number of events and of events whose
-- ts/dur is not a usable number (NaN, inf, or beyond +-9e15 us, which would
-- overflow integer nanoseconds), with the first such event's name.
-- Every column insert_events.sql reads is read here with the same type (the
-- `fields` count only makes DuckDB parse them): a value that fails only there,
-- such as a duplicate "tid" key in an event, must fail here instead.
SELECT count(*) AS events,
       count_if(NOT (ts IS NULL OR (isfinite(ts) AND abs(ts) < 9e15))
             OR NOT (dur IS NULL OR (isfinite(dur) AND abs(dur) < 9e15))) AS bad_time,
       first(name) FILTER (WHERE NOT (ts IS NULL OR (isfinite(ts) AND abs(ts) < 9e15))
                              OR NOT (dur IS NULL OR (isfinite(dur) AND abs(dur) < 9e15))) AS bad_name,
       count(ph) + count(cat) + count(pid) + count(tid) + count(id) + count(args) AS fields
FROM read_json($files, format = 'array', maximum_object_size = 33554432,
               columns = {ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR',
                          pid: 'VARCHAR', tid: 'VARCHAR', ts: 'DOUBLE', dur: 'DOUBLE',
                          id: 'VARCHAR', args: 'JSON'})
