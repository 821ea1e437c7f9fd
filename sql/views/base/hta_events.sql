-- hta_events: the events as Holistic Trace Analysis (HTA 0.5) holds one trace
-- after loading it with its defaults: what `--hta` reports compute from, so
-- that they reproduce HTA's numbers to its µs. Read from HTA's source
-- (fixtures/golden/hta/README.md has the details and the file names):
--
-- * Kept: events with a dur and a category, but category 'Trace'
--   (trace_parser._compress_df).
-- * Times (round_down_time_stamps): when any ts of the trace is fractional,
--   HTA works in whole µs: ts = ceil(ts) and end = floor(ts + dur), both on
--   the float64 values of the file's ts and dur, so the sum is rounded to the
--   float64 spacing first (0.25 µs near 1.7e15 µs: an end of x.875 or more
--   becomes x+1). ts and dur are rebuilt here as the float64 the file's
--   3-decimal text parses to (times relative to baseTimeNanoseconds, as HTA
--   reads them), then shifted back to ns since the epoch. Traces with whole-µs
--   ts are not rounded (HTA's analyses then add dur to ts after subtracting
--   the trace's first ts, where float64 is exact to far below a ns).
-- * stream: the 'stream' arg as Python's int() reads it, else -1 ('0x0' is
--   -1); correlation: the 'correlation' arg, else -1.
-- * on_gpu: HTA's GPU events (GPUKernelFilter): stream >= 0 and correlation
--   >= 0, or named 'Event Sync' / 'Context Sync'. Everything else is a CPU
--   event (CPUOperatorFilter), whatever its category.
-- * partner_event_id (HTA's index_correlation, transform_correlation_to_index):
--   among events with a correlation, each GPU event's partner is the CPU event
--   with the same correlation (the last in the file when several), and each
--   CPU event's the GPU event. partner_ts_ns is what HTA's idle-time breakdown
--   looks up as the launch time: the ts of the event at position
--   index_correlation if it is still kept (an unmatched GPU event has
--   index_correlation 0: the trace's first event).
-- * Last step (Trace._filter_irrelevant_gpu_kernels, include_last_profiler_step
--   = False): in a trace with two or more distinct names containing
--   'ProfilerStep' (GPU-side gpu_user_annotation events included), CPU events
--   starting before the last such CPU event's start are kept, and GPU events
--   whose correlation equals a kept CPU event's (once per such CPU event, as
--   HTA's merge repeats them); other traces are kept whole.
-- * kernel_type: HTA's get_kernel_type on the full name: COMMUNICATION
--   (^nccl.*Kernel), MEMORY (^Memcpy, ^Memset, ^dma), OTHER (contains Memcpy
--   or Sync, or starts with Memset), else COMPUTATION.
-- Unlike HTA, which loads all the ranks of a directory together, each trace
-- is taken alone (the ProfilerStep names are counted per trace).
--
-- requires: events, traces
--
-- Columns:
-- trace_id          INTEGER  trace
-- event_id          BIGINT   events.event_id (HTA's index is event_id - 1: the position in traceEvents)
-- cat               VARCHAR  canonical category (events.cat)
-- cat_raw           VARCHAR  category as written (HTA's)
-- name              VARCHAR  event name
-- device            INTEGER  device activity: events.device, else its pid (as gpu_ops); other events:
--                            their device arg (NULL: none)
-- pid               BIGINT   process
-- tid               BIGINT   thread
-- ts_ns             BIGINT   HTA's start, ns since the epoch (whole µs after baseTimeNanoseconds when rounded)
-- dur_ns            BIGINT   HTA's duration, ns (end_ns - ts_ns; negative for a sub-µs event rounded)
-- end_ns            BIGINT   HTA's end, ns since the epoch
-- stream            BIGINT   HTA's stream (-1: none)
-- correlation       BIGINT   HTA's correlation (-1: none)
-- on_gpu            BOOLEAN  HTA's GPU event (see above)
-- kernel_type       VARCHAR  'COMPUTATION', 'COMMUNICATION', 'MEMORY' or 'OTHER'
-- partner_event_id  BIGINT   the event HTA links it to by correlation (NULL: none)
-- partner_ts_ns     BIGINT   HTA's ts of the event at position index_correlation, if kept (its ts_runtime)
{% from "templates/categories.sql" import device_cats, device_index, sql_list %}
{% macro ts_double(ns) -%}
(CASE WHEN {{ ns }} < 0 THEN '-' ELSE '' END || (abs({{ ns }}) // 1000)::VARCHAR || '.'
 || lpad((abs({{ ns }}) % 1000)::VARCHAR, 3, '0'))::DOUBLE
{%- endmacro %}
CREATE OR REPLACE VIEW hta_events AS
WITH t AS (
    SELECT tr.trace_id, coalesce(tr.base_time_ns, 0) AS base,
           -- HTA rounds when its ts column is float64: a fractional (or missing) ts
           EXISTS (SELECT 1 FROM events x WHERE x.trace_id = tr.trace_id
                   AND (x.ts_ns IS NULL OR (x.ts_ns - coalesce(tr.base_time_ns, 0)) % 1000 <> 0)) AS rounds
    FROM traces tr
),
e AS (
    SELECT ev.trace_id, ev.event_id, ev.cat, ev.cat_raw, ev.name,
           CASE WHEN ev.cat IN {{ sql_list(device_cats) }} THEN {{ device_index('ev.') }} ELSE ev.device END
               AS device,
           ev.pid, ev.tid, ev.ts_ns, ev.dur_ns, t.base, t.rounds,
           CASE WHEN ev.stream IS NULL THEN -1  -- no stream arg that any reader takes for a number
                ELSE CASE json_type(ev.args, '$.stream')
                         WHEN 'BIGINT' THEN try_cast(json_extract_string(ev.args, '$.stream') AS BIGINT)
                         WHEN 'UBIGINT' THEN try_cast(json_extract_string(ev.args, '$.stream') AS BIGINT)
                         WHEN 'DOUBLE' THEN try_cast(trunc(json_extract_string(ev.args, '$.stream')::DOUBLE) AS BIGINT)
                         WHEN 'VARCHAR' THEN
                             CASE WHEN regexp_full_match(json_extract_string(ev.args, '$.stream'),
                                                         '\s*[+-]?[0-9]+(_[0-9]+)*\s*')
                                  THEN try_cast(replace(trim(json_extract_string(ev.args, '$.stream')), '_', '')
                                                AS BIGINT) END
                     END END AS stream_raw,
           coalesce(ev.correlation, -1) AS correlation
    FROM events ev JOIN t USING (trace_id)
    WHERE ev.dur_ns IS NOT NULL AND ev.ts_ns IS NOT NULL AND ev.cat_raw IS NOT NULL AND ev.cat_raw <> 'Trace'
),
timed AS (
    SELECT * EXCLUDE (stream_raw), coalesce(stream_raw, -1) AS stream,
           CASE WHEN rounds THEN base + ceil({{ ts_double('ts_ns - base') }})::BIGINT * 1000 ELSE ts_ns END AS ts_h,
           CASE WHEN rounds THEN base + floor({{ ts_double('ts_ns - base') }} + dur_ns::DOUBLE / 1000::DOUBLE)::BIGINT * 1000
                ELSE ts_ns + dur_ns END AS end_h
    FROM e
),
g AS (
    SELECT *, (stream >= 0 AND correlation >= 0) OR name IN ('Event Sync', 'Context Sync') AS on_gpu FROM timed
),
partners AS (  -- index_correlation: the last partner in the file wins
    SELECT trace_id, event_id,
           CASE WHEN on_gpu THEN max(event_id) FILTER (WHERE NOT on_gpu) OVER w
                ELSE max(event_id) FILTER (WHERE on_gpu) OVER w END AS partner_event_id
    FROM g
    WHERE correlation <> -1
    WINDOW w AS (PARTITION BY trace_id, correlation)
),
steps AS (  -- traces HTA cuts: 2+ names with ProfilerStep; the last step's CPU-side start
    SELECT trace_id, max(ts_h) FILTER (WHERE NOT on_gpu) AS last_start
    FROM g WHERE contains(name, 'ProfilerStep')
    GROUP BY trace_id
    HAVING count(DISTINCT name) >= 2
),
kept_cpu AS (
    SELECT g.* FROM g LEFT JOIN steps s USING (trace_id)
    WHERE NOT g.on_gpu AND (s.trace_id IS NULL OR g.ts_h < s.last_start)
),
cut_corr AS (  -- correlations of the kept CPU events in cut traces, with how often each occurs
    SELECT k.trace_id, k.correlation, count(*) AS n
    FROM kept_cpu k JOIN steps s USING (trace_id)
    GROUP BY ALL
),
kept AS (
    SELECT * FROM kept_cpu
    UNION ALL
    SELECT g.* FROM g WHERE g.on_gpu AND g.trace_id NOT IN (SELECT trace_id FROM steps)
    UNION ALL
    SELECT g.* FROM g JOIN cut_corr c USING (trace_id, correlation), range(c.n)
    WHERE g.on_gpu
),
linked AS (
    SELECT k.*, p.partner_event_id,
           -- index_correlation: the partner; 0 (the first event) for an unmatched correlation >= 0
           CASE WHEN p.partner_event_id IS NOT NULL THEN p.partner_event_id
                WHEN k.correlation >= 0 THEN 1 END AS lookup_event_id
    FROM kept k LEFT JOIN partners p USING (trace_id, event_id)
)
SELECT l.trace_id, l.event_id, l.cat, l.cat_raw, l.name, l.device, l.pid, l.tid,
       l.ts_h AS ts_ns, l.end_h - l.ts_h AS dur_ns, l.end_h AS end_ns, l.stream, l.correlation, l.on_gpu,
       CASE WHEN regexp_matches(l.name, '^nccl.*Kernel') THEN 'COMMUNICATION'
            WHEN regexp_matches(l.name, '^(Memcpy|Memset|dma)') THEN 'MEMORY'
            WHEN contains(l.name, 'Memcpy') OR starts_with(l.name, 'Memset') OR contains(l.name, 'Sync')
                THEN 'OTHER'
            ELSE 'COMPUTATION' END AS kernel_type,
       l.partner_event_id,
       (SELECT any_value(x.ts_h) FROM kept x WHERE x.trace_id = l.trace_id AND x.event_id = l.lookup_event_id)
           AS partner_ts_ns
FROM linked l;
