-- The trace_facts rows of the traces that have none yet (just loaded, or
-- loaded before trace_facts existed), from the trace_summary view: what the
-- runs view lists without reading events. Parameter: trace_ids (INTEGER[]):
-- the traces without facts (the filter on trace_id reaches the scans of events).
INSERT INTO trace_facts (trace_id, devices, steps, step_total_ns, step_max_ns, busy_ns, window_ns)
SELECT trace_id, devices, steps, step_total_ns, step_max_ns, busy_ns, window_ns
FROM trace_summary
WHERE trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids)  -- a range the scans can skip by
  AND list_contains($trace_ids, trace_id)
