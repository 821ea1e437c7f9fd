-- The positions of the marker events that separate the traces of a group
-- staged as one concatenated chunk (stage_events.sql, grouped), in order. The
-- marker's ph holds a token made for the load, so no trace's event has it;
-- the loader still checks that there is one between every two traces.
-- Template: raw (the group's staged table). Parameter: marker (VARCHAR).
-- Returns one row per marker: pos BIGINT.
SELECT pos FROM {{ raw }} WHERE ph = $marker ORDER BY pos
