-- Schema version 5 -> 6: events gains unfinished (a RecordFunction not ended
-- on its thread while profiling, args '"finished": false'; see sql/schema.sql),
-- set here from the stored args. The nesting of the traces that have such
-- events is computed again by the session after this step, in the same
-- transaction (duckprof.session.migrate): the nesting now leaves them out, as
-- torch's tree does. Run by duckprof.session in one transaction, with the old
-- views dropped first.
ALTER TABLE events ADD COLUMN IF NOT EXISTS unfinished BOOLEAN;
UPDATE events SET unfinished = true
WHERE ph = 'X' AND contains(args, '"finished"') AND json_extract_string(args, '$.finished') = 'false';
