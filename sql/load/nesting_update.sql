-- The nesting columns of `events` from a nesting table that nesting.sql wrote
-- from the stored events (raws none): an in-memory load inserts its events
-- without them and leaves them to first use (session.DEFERRED). Its rows are
-- the host events; the other events keep NULL, as an eager load leaves them.
-- The rows go in the order of events (the nesting table's is by thread):
-- DuckDB updates rows in random order many times slower (benchmarks/README.md).
-- Template: nest (the table). Parameter: trace_ids (INTEGER[]).
UPDATE events
SET parent_event_id = n.parent_event_id, depth = n.depth, self_ns = n.self_ns, op_event_id = n.op_event_id
FROM (SELECT * FROM {{ nest }} ORDER BY trace_id, event_id) n
WHERE events.trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids)
  AND list_contains($trace_ids, events.trace_id)
  AND events.trace_id = n.trace_id AND events.event_id = n.event_id
