-- patterns-events: every event the anti-pattern rules matched, one row each
-- (report patterns --events), with its finding's severity.
-- question: Which events did each anti-pattern rule match?
--
-- The rows that `report patterns` counts and sums, in time order per trace
-- and rule: what each rule matched, where, and the time it puts at stake
-- (see the rule's header in sql/reports/patterns/). Rules skipped on a trace
-- match nothing on it.
--
-- variant of: patterns
-- requires: steps, trace_files, host_events, cpu_ops
--
-- Columns:
-- run          VARCHAR  run label
-- rank         INTEGER  rank of the trace
-- trace_id     INTEGER  trace
-- rule         VARCHAR  rule name
-- severity     VARCHAR  the severity of the rule's finding on this trace (report patterns)
-- event_id     BIGINT   [wide]  the matched event (events.event_id)
-- name         VARCHAR  its name
-- ts_ms        DOUBLE   its start, ms after the trace's first event
-- dur_us       DOUBLE   its duration, µs
-- step         BIGINT   its ProfilerStep N
-- at_stake_us  DOUBLE   the time it puts at stake, µs (NULL: not estimated)
-- source       VARCHAR  where in the code (NULL: no Python stacks)
-- detail       VARCHAR  what matched
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import sources, stepped_hits, trace_bases, severity with context %}
WITH stepped AS (
    {{ stepped_hits(result) | indent(4) }}
),
traces AS (
    {{ trace_bases() | indent(4) }}
),
findings AS (
    SELECT h.rule, h.trace_id,
           {{ severity('sum(h.at_stake_ns)', 'any_value(t.base_ns)', 'any_value(r.severity)') }} AS severity
    FROM stepped h JOIN traces t USING (trace_id) JOIN {{ result }}_rules r USING (rule)
    GROUP BY h.rule, h.trace_id
)
SELECT t.run, t.rank, h.trace_id, h.rule, f.severity, h.event_id, h.name, (h.ts_ns - t.first_ts_ns) / 1e6 AS ts_ms,
       h.dur_ns / 1e3 AS dur_us, h.step, h.at_stake_ns / 1e3 AS at_stake_us, s.source, h.detail
FROM stepped h
JOIN traces t USING (trace_id)
JOIN findings f USING (rule, trace_id)
JOIN {{ result }}_rules r USING (rule)
LEFT JOIN ({{ sources('stepped') | indent(10) }}) s USING (rule, trace_id, event_id)
ORDER BY t.run, t.rank NULLS LAST, h.trace_id, r.position, h.ts_ns, h.event_id
