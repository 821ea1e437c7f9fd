-- categories: GPU time by kernel category per device (and per step): the
-- breakdown of torch.compile's Inductor GPU-profiling workflow, from any trace.
-- question: How is each GPU's time split between kernel categories, and how busy is it?
--
-- Every device event (gpu_activity: kernels, memcpys, memsets, MTIA device
-- events) gets the category of the kernel_categories view (Triton pointwise,
-- reduction, persistent reduction, template; GEMM; conv; attention;
-- communication; memcpy by direction; memset; elementwise; reduction;
-- normalization; embedding; optimizer; pooling; sort_scan; other), or of the first matching rule of --rules FILE (a CSV
-- with the columns pattern, category: pattern is a regex searched in the
-- kernel name, case-insensitive; sql/templates/categories.sql, categorized).
-- MIOpen's helper kernels (batched_transpose_*, SubTensorOp*, ...), conv by
-- name, are elementwise when launched by an op that is no convolution nor
-- inside one (a transpose of aten::copy_; templates/categories.sql
-- helpers_outside_conv).
-- Each event is counted once, so per device the categories' times add up to
-- the device's GPU time (the sum of its events' durations).
--
-- Window: the whole trace (trace_files.wall_ns: first event start to last event
-- end, what the profiler recorded), or with --by-step each ProfilerStep#N's
-- host-side range. With --by-step an event belongs to the step in which its
-- launch call started (its own start when the trace has no launch call for
-- it); a trace without steps gets one row per category for its whole window
-- (step empty), and a note. busy_pct is the Inductor doc's "Percent of time
-- when GPU is busy": the time the device had at least one event running
-- (the union of its event intervals: overlapping streams count once) over the
-- window. (The doc's script sums kernel times instead, and divides by the
-- wall time its benchmark measured: the same figure when streams do not
-- overlap and the profile covers the benchmark.)
--
-- uses: device
-- option: --by-step FLAG  one block per ProfilerStep#N
-- option: --category VARCHAR  list the kernels of this category instead (sql/reports/categories_kernels.sql)
-- option: --rules VARCHAR  CSV of your own rules (columns pattern, category), tried before the built-in ones
-- option: --limit/-n INTEGER >= 0 = 20  with --category: kernels per device (0 = all)
-- example: duckprof report categories trace.json.gz --by-step
-- requires: gpu_activity, kernel_categories, steps, trace_files, launches, cpu_ops
--
-- Columns:
-- run        VARCHAR  run label
-- rank       INTEGER  rank of the trace
-- trace_id   INTEGER  trace
-- device     INTEGER  GPU index
-- step       BIGINT   N of ProfilerStep#N, or its place in time order where N repeat (the steps view); with --by-step; empty: the whole trace
-- category   VARCHAR  kernel category
-- count      BIGINT   device events (kernels, copies, memsets) of the category
-- total_us   DOUBLE   their total duration, µs
-- mean_us    DOUBLE  [wide]  per event, µs
-- gpu_pct    DOUBLE   total_us / the device's GPU time in the window (sum of all its events), %
-- wall_pct   DOUBLE   total_us / the window, %
-- busy_pct   DOUBLE   the device's busy time (union of its events) / the window, %: "Percent of time
--                     when GPU is busy"
-- busy_us    DOUBLE  [wide]  the device's busy time in the window (union of its events), µs
-- window_us  DOUBLE  [wide]  the window: the trace's profiled time, or the step's host-side duration, µs
{% from "templates/scope.sql" import run_scope, device_scope with context %}
{% from "templates/notes.sql" import gpu_notes with context %}
{% from "templates/intervals.sql" import covered_lengths %}
{% from "templates/categories.sql" import categorized, helpers_outside_conv, event_category %}
WITH scope AS (
    SELECT trace_id, run, rank, first_ts_ns, last_end_ns FROM trace_files WHERE TRUE {{ run_scope() }}
),
cats AS (
    {{ categorized(rules) | indent(4) }}
),
a AS (
    SELECT g.trace_id, g.device, g.ts_ns, g.end_ns, g.dur_ns, coalesce(g.launch_ts_ns, g.ts_ns) AS at_ns,
           {{ event_category() }} AS category
    FROM gpu_activity g
    JOIN scope USING (trace_id)
    JOIN cats c ON c.kind = g.kind AND c.name = g.name
    {{ helpers_outside_conv('g') }}
    WHERE TRUE {{ device_scope('g.') }}
),
windows AS (  -- (trace, device, step, window) for every device with activity
    SELECT s.trace_id, d.device, s.step, s.event_id AS window_id, s.ts_ns, s.end_ns
    FROM steps s
    JOIN (SELECT DISTINCT trace_id, device FROM a) d USING (trace_id)
    WHERE $by_step
    UNION ALL
    SELECT d.trace_id, d.device, NULL::BIGINT AS step, -1 AS window_id, t.first_ts_ns AS ts_ns, t.last_end_ns AS end_ns
    FROM (SELECT DISTINCT trace_id, device FROM a) d
    JOIN scope t USING (trace_id)
    WHERE NOT $by_step OR NOT EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = d.trace_id)
),
placed AS (  -- each event in its window (by its launch; the whole-trace window holds every event)
    SELECT a.*, w.step, w.window_id
    FROM a ASOF JOIN windows w
      ON w.trace_id = a.trace_id AND w.device = a.device AND a.at_ns >= w.ts_ns
    WHERE a.at_ns < w.end_ns OR w.window_id = -1
),
busy AS (
    {{ covered_lengths('windows', '(SELECT trace_id, device, ts_ns, end_ns, 0 AS class FROM a)', ['trace_id', 'device'],
                       sets={'covered_ns': [0]}) | indent(4) }}
),
per_cat AS (
    SELECT trace_id, device, window_id, category, count(*) AS count, sum(dur_ns) AS total_ns
    FROM placed
    GROUP BY trace_id, device, window_id, category
),
per_window AS (
    SELECT trace_id, device, window_id, sum(total_ns) AS device_ns FROM per_cat GROUP BY ALL
)
SELECT s.run, s.rank, c.trace_id, c.device, b.step, c.category, c.count,
       c.total_ns / 1e3 AS total_us,
       c.total_ns / 1e3 / c.count AS mean_us,
       100.0 * c.total_ns / nullif(w.device_ns, 0) AS gpu_pct,
       100.0 * c.total_ns / nullif(b.end_ns - b.ts_ns, 0) AS wall_pct,
       100.0 * b.covered_ns / nullif(b.end_ns - b.ts_ns, 0) AS busy_pct,
       b.covered_ns / 1e3 AS busy_us,
       (b.end_ns - b.ts_ns) / 1e3 AS window_us
FROM per_cat c
JOIN per_window w USING (trace_id, device, window_id)
JOIN busy b USING (trace_id, device, window_id)
JOIN scope s USING (trace_id)
ORDER BY s.run, s.rank NULLS LAST, c.trace_id, c.device, b.step NULLS FIRST, b.ts_ns, c.total_ns DESC, c.category

-- @notes
SELECT * FROM (
    SELECT f.file_name || ': no ProfilerStep#N annotations in this trace: one window for the whole trace' AS note,
           false AS instead
    FROM trace_files f
    WHERE $by_step AND NOT EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = f.trace_id)
      AND EXISTS (SELECT 1 FROM {{ result }} r WHERE r.trace_id = f.trace_id)
      {{ run_scope('f.') }}
    ORDER BY f.trace_id
)
UNION ALL
{%- if rules %}
SELECT 'categories of ' || format('{:,}', count(*) FILTER (WHERE by_rule)) || ' of '
       || format('{:,}', count(*)) || ' kernel name(s) come from --rules', false
FROM ({{ categorized(rules) | indent(6) }})
UNION ALL
{%- endif %}
SELECT * FROM ({{ gpu_notes() | indent(15) }})
