-- patterns: known performance anti-patterns found in the trace, one row per rule
-- that matched (or could not run) per trace, with what it costs and the fix.
-- question: Which known performance anti-patterns does this trace show, what do they cost, and how are they fixed?
--
-- Each rule is one file in sql/reports/patterns/ (its header says what it
-- detects, why it matters, how to fix it, what the trace must contain, how it
-- matches and how its time at stake is estimated): TorchTidy's eight
-- (torch.profiler._pattern_matcher, reproduced on the trace file: extra-cuda-copy,
-- for-loop-indexing, fp32-matmul, single-tensor-optimizer, dataloader,
-- zero-grad, conv-bias-bn, fp16-matmul-dims) and GPU-side rules it lacks (sync,
-- pageable-memcpy, launch-bound, gpu-idle, data-loading, comm-overlap,
-- tiny-memcpy) and compile-in-step (torch.compile compiling inside the steps).
-- --list shows them all, --events every matched event.
-- A rule that cannot run on a trace (no GPU, no shapes, no stacks, no steps)
-- is a row with severity 'skipped' and the reason.
--
-- Time at stake: the rule's estimate of the time the pattern costs (its
-- method column), summed over its matches; stake_pct relates it to the
-- trace's time: the sum of its ProfilerStep#N durations, or its profiled
-- window (trace_files.wall_ns) without steps. Findings overlap (a sync causes
-- a GPU idle gap, both are reported): do not add their times.
-- Severity: high when stake_pct >= --high-pct, medium when >= --medium-pct,
-- else low; a rule whose time is not estimated gets the severity its header
-- declares.
-- detail, source and step are those of the first match; source is the
-- innermost user frame (with_stack) or the first user frame of a 'Call stack'.
--
-- uses: rules
-- shared: gpu_activity
-- option: --list FLAG  every rule instead: what it needs and whether it can run on these traces
-- option: --events FLAG  every matched event instead, one row each
-- option: --examples INTEGER >= 0 = 3  example events per finding (the examples column)
-- option: --fail-on CHOICE(low,medium,high)  exit with code 1 when a finding has this severity or a higher one (for CI)
-- option: --high-pct DOUBLE >= 0 = 10  severity high: time at stake at least this % of the trace's step time
-- option: --medium-pct DOUBLE >= 0 = 1  severity medium: at least this % (less: low)
-- example: duckprof report patterns trace.json.gz --only sync,dataloader --format json
-- requires: steps, trace_files, host_events, cpu_ops, gpu_ops, trace_devices
--
-- Columns:
-- run           VARCHAR  run label
-- rank          INTEGER  rank of the trace
-- trace_id      INTEGER  trace
-- rule          VARCHAR  rule name (--list)
-- severity      VARCHAR  'high', 'medium', 'low', or 'skipped' (the rule cannot run on this trace)
-- count         BIGINT   matched events
-- at_stake_us   DOUBLE   time the pattern costs, µs (NULL: not estimated)
-- stake_pct     DOUBLE   at_stake_us / the trace's step time (or profiled time), %
-- detail        VARCHAR  the first matched event (its name and what matched); for a skipped rule, why
-- source        VARCHAR  where in the code the first match is, e.g. 'train.py(82): step' (NULL: no Python stacks)
-- step          BIGINT   [wide]  the ProfilerStep N of the first match
-- fix           VARCHAR  [wide]  how to fix it (on a trace without a GPU, the rule's fix-no-gpu when it has one)
-- method        VARCHAR  [wide]  how at_stake_us is estimated
-- examples      JSON     [wide]  the first --examples matched events: event_id, name, ts_ms (after the trace's
--                                first event), dur_us, step, at_stake_us, source, detail
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import sources, stepped_hits, trace_bases, severity, rule_fix with context %}
WITH skipped AS (
    SELECT rule, trace_id, string_agg(reason, '; ' ORDER BY reason) AS reason
    FROM {{ result }}_skipped GROUP BY rule, trace_id
),
stepped AS (
    {{ stepped_hits(result) | indent(4) }}
),
traces AS (
    {{ trace_bases(gpu=true) | indent(4) }}
),
found AS (
    SELECT rule, trace_id, count(*) AS count, sum(at_stake_ns)::BIGINT AS at_stake_ns
    FROM stepped GROUP BY rule, trace_id
),
examples AS (
    SELECT * FROM stepped
    QUALIFY row_number() OVER (PARTITION BY rule, trace_id ORDER BY ts_ns, event_id) <= greatest($examples, 1)
),
sourced AS (
    SELECT e.*, s.source, row_number() OVER (PARTITION BY e.rule, e.trace_id ORDER BY e.ts_ns, e.event_id) AS n
    FROM examples e
    LEFT JOIN ({{ sources('examples') | indent(14) }}) s USING (rule, trace_id, event_id)
),
shown AS (
    SELECT s.rule, s.trace_id,
           any_value(CASE WHEN contains(s.name, coalesce(s.detail, '')) THEN s.name
                          ELSE s.name || ': ' || s.detail END) FILTER (WHERE n = 1) AS detail,
           any_value(s.step) FILTER (WHERE n = 1) AS step,
           any_value(s.source) FILTER (WHERE n = 1) AS source,
           to_json(list(struct_pack(event_id := s.event_id, name := s.name,
                                    ts_ms := (s.ts_ns - t.first_ts_ns) / 1e6, dur_us := s.dur_ns / 1e3,
                                    step := s.step, at_stake_us := s.at_stake_ns / 1e3,
                                    source := s.source, detail := s.detail) ORDER BY n)
                   FILTER (WHERE n <= $examples)) AS examples
    FROM sourced s JOIN traces t USING (trace_id)
    GROUP BY s.rule, s.trace_id
),
out AS (
    SELECT t.run, t.rank, f.trace_id, f.rule,
           {{ severity('f.at_stake_ns', 't.base_ns', 'r.severity') }} AS severity,
           f.count, f.at_stake_ns / 1e3 AS at_stake_us, 100.0 * f.at_stake_ns / nullif(t.base_ns, 0) AS stake_pct,
           s.detail, s.source, s.step, {{ rule_fix('r', 't') }} AS fix, r.method,
           coalesce(s.examples, '[]')::JSON AS examples, r.position
    FROM found f
    JOIN traces t USING (trace_id)
    JOIN {{ result }}_rules r USING (rule)
    LEFT JOIN shown s USING (rule, trace_id)
    UNION ALL
    SELECT t.run, t.rank, k.trace_id, k.rule, 'skipped', NULL, NULL, NULL, k.reason, NULL, NULL,
           {{ rule_fix('r', 't') }}, r.method,
           NULL, r.position
    FROM skipped k
    JOIN traces t USING (trace_id)
    JOIN {{ result }}_rules r USING (rule)
)
SELECT run, rank, trace_id, rule, severity, count, at_stake_us, stake_pct, detail, source, step, fix, method,
       examples
FROM out
ORDER BY run, rank NULLS LAST, trace_id,
         CASE severity WHEN 'high' THEN 0 WHEN 'medium' THEN 1 WHEN 'low' THEN 2 ELSE 3 END,
         at_stake_us DESC NULLS LAST, position

-- @notes
WITH t AS (SELECT count(*) AS n FROM trace_files f WHERE TRUE {{ run_scope('f.') }}),
r AS (SELECT count(*) AS n FROM {{ result }}_rules),
fired AS (SELECT DISTINCT rule, fix FROM {{ result }} WHERE severity <> 'skipped')
SELECT note, instead FROM (
    SELECT 0 AS k, 0 AS position,
           'no anti-pattern found by ' || r.n || ' rule(s) on ' || t.n || ' trace(s)' AS note,
           NOT EXISTS (SELECT 1 FROM {{ result }}) AS instead
    FROM t, r
    WHERE NOT EXISTS (SELECT 1 FROM fired)
    UNION ALL
    SELECT 1, u.position, 'fix (' || u.rule || '): ' || f.fix, false
    FROM {{ result }}_rules u JOIN fired f USING (rule)
)
ORDER BY k, position, note
