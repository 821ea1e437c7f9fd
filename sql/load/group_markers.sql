-- Take the marker events that separate the traces of a group staged as one
-- chunk (stage_events.sql, grouped) out of its table, and return their
-- positions (in no order): stage_group_view.sql numbers each trace's events
-- from them. The marker's ph holds a token made for the load, so no trace's
-- event has it; the loader still checks that there is one between every two
-- traces. Deleting the few markers here, once, spares every read of the
-- group's view a filter (and its guess of how many rows pass).
-- Template: raw (the group's staged table). Parameter: marker (VARCHAR).
-- Returns one row per marker: pos BIGINT.
DELETE FROM {{ raw }} WHERE ph = $marker RETURNING pos
