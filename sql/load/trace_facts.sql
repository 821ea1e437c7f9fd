-- The trace_facts rows of the traces that have none yet (just loaded, or
-- loaded before trace_facts existed), from the trace_summary view: what the
-- runs view lists without reading events. Parameter: trace_ids (INTEGER[]):
-- the traces to consider (NULL: every trace).
INSERT INTO trace_facts (trace_id, devices, steps, step_total_ns, step_max_ns, busy_ns, window_ns)
SELECT trace_id, devices, steps, step_total_ns, step_max_ns, busy_ns, window_ns
FROM trace_summary
WHERE ($trace_ids IS NULL OR list_contains($trace_ids, trace_id))
  AND trace_id NOT IN (SELECT trace_id FROM trace_facts)
