-- patterns-list: every rule of `report patterns`, what it needs, and whether it
-- can run on each trace (report patterns --list).
-- question: Which anti-pattern rules are there, and which of them can run on these traces?
--
-- One row per trace and rule (in rule order). runs is false when the trace
-- lacks what the rule needs; reason says what.
--
-- variant of: patterns
-- requires: trace_files, gpu_ops, trace_devices
--
-- Columns:
-- run       VARCHAR  run label
-- rank      INTEGER  rank of the trace
-- trace_id  INTEGER  trace
-- rule      VARCHAR  rule name (for --only)
-- runs      BOOLEAN  the rule can run on this trace
-- reason    VARCHAR  why not
-- needs     VARCHAR  what the trace must contain
-- severity  VARCHAR  its severity when the time at stake is not estimated
-- torch     VARCHAR  the TorchTidy pattern it reproduces (torch.profiler._pattern_matcher)
-- summary   VARCHAR  what it detects
-- options   VARCHAR  [wide]  its thresholds, with their defaults
-- fix       VARCHAR  [wide]  how to fix what it finds on this trace (without a GPU: its fix-no-gpu, when it has one)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import has_gpu, rule_fix with context %}
WITH skipped AS (
    SELECT rule, trace_id, string_agg(reason, '; ' ORDER BY reason) AS reason
    FROM {{ result }}_skipped GROUP BY rule, trace_id
)
SELECT f.run, f.rank, f.trace_id, r.rule, s.reason IS NULL AS runs, s.reason, r.needs, r.severity, r.torch,
       r.summary, r.options, {{ rule_fix('r', 'f') }} AS fix
FROM (SELECT *, {{ has_gpu('trace_files') }} AS has_gpu FROM trace_files) f
CROSS JOIN {{ result }}_rules r
LEFT JOIN skipped s ON s.rule = r.rule AND s.trace_id = f.trace_id
WHERE TRUE {{ run_scope('f.') }}
ORDER BY f.run, f.rank NULLS LAST, f.trace_id, r.position
