-- normalized_events(raws, exact, nesting): the macro that turns staged events
-- (stage_events.sql: one view per trace, numbered in file order and checked by
-- validate.sql) into the columns of `events`, written once for the two
-- statements that read them: nesting.sql (parents, depth, self time) and
-- insert_events.sql (the rows themselves).
-- raws: the staged relations of one batch, each {view, position} (one trace's
-- view, stage_view.sql) or {view, positions} (a group of small traces,
-- stage_group_view.sql: positions[k] for its file k, none for its files not in
-- the batch; and offset = positions[0] when they are offset, offset + 1,
-- ...); a position is the trace's place in the batch (trace_id =
-- first_trace_id + position). Or a chunk file read here, not staged: {chunk:
-- max_object, position} (read_chunk.sql; the parameter $files; the batch's
-- only trace, a load into a session's memory: load.Loader._insert), with
-- exact: true for fractional absolute timestamps (ts read as DECIMAL(38, 9):
-- ts_ns is the ns of its text, which is what a staged trace of such
-- timestamps gets, from its exact table, when their double is within 1 us of
-- it: always, for a ts of its own; direct_check.sql confirms that the trace
-- has such timestamps, which staging would have found).
-- exact: {position: table of exact timestamps
-- (exact_ts.sql)} for the traces that need one (never in a group).
-- nesting: for nesting.sql, which reads no args column but unfinished (see
-- below).
-- Bound parameters of the statement that uses it: first_trace_id (the first
-- view's trace_id; the others follow), base_ns (BIGINT[], one per view; 0 when
-- ts is absolute).
--
-- Timestamps: DuckDB parses numbers as DOUBLE; splitting integer and fraction
-- keeps whole nanoseconds exact while ulp(ts) < 1 ns (ts < 2^43 us, true for
-- relative-to-baseTimeNanoseconds traces); see README "Timestamps". Beyond
-- that (fractional absolute us, ~1.7e15) the exact value read from the text
-- (exact_ts.sql) replaces it, when it is within 1 us of the double (a "ts"
-- inside args is not the event's own).
--
-- Values read from args: arg_columns below, one line each (column, the arg
-- names tried in order, type). Numbers written as strings ("0") are read too.
-- Columns: trace_id, event_id, ph, cat, cat_raw, name, pid, tid, pid_label,
-- tid_label, ts_ns, dur_ns, end_ns, the arg_columns, flow_id, args,
-- unfinished (see sql/schema.sql, events).
{% from "templates/categories.sql" import canonical_cats, sql_array, sql_list %}
{% from "load/read_chunk.sql" import read_chunk, exact_ns %}
{%- set arg_columns = [
    ('external_id', ['External id', 'external id'], 'BIGINT'),
    ('correlation', ['correlation'], 'BIGINT'),
    ('device', ['device'], 'INTEGER'),
    ('stream', ['stream', 'stream_id', 'sycl queue'], 'BIGINT'),
    ('input_dims', ['Input Dims'], 'JSON'),
    ('input_types', ['Input type'], 'JSON'),
    ('concrete_inputs', ['Concrete Inputs'], 'JSON'),
] %}
{#- a JSON text x with the quotes of a string trimmed: trim(x, '"') is as costly
    as the extraction of the value, and only a string starts (and ends) with a
    quote, so numbers skip it -#}
{%- macro unquoted(x) -%}
CASE WHEN starts_with({{ x }}, '"') THEN trim({{ x }}, '"') ELSE {{ x }} END
{%- endmacro %}
{#- one entry of raws as rows with src = the trace's position in the batch: a
    trace's view (src = its position), or a group's view (stage_group_view.sql)
    whose src k becomes positions[k], its files not in this batch (none) left out;
    when they are all in it, one after another from positions[0] (offset: a
    group is a batch, so far the usual case), src + offset without a lookup -#}
{%- macro staged_source(raw) -%}
{%- if raw.chunk is defined and raw.exact -%}
SELECT {{ raw.position | int }} AS src, ordinality AS event_id, ph, cat, name, pid, tid, NULL::DOUBLE AS ts, dur, id,
       args, {{ exact_ns('ts', 'ts::VARCHAR') }} AS read_ns
FROM {{ read_chunk(raw.chunk, 'DECIMAL(38, 9)') }}
{%- elif raw.chunk is defined -%}
SELECT {{ raw.position | int }} AS src, ordinality AS event_id, ph, cat, name, pid, tid, ts, dur, id, args
FROM {{ read_chunk(raw.chunk) }}
{%- elif raw.offset is defined -%}
SELECT {% if raw.offset %}* REPLACE ((src + {{ raw.offset | int }})::INTEGER AS src){% else %}*{% endif %} FROM {{ raw.view }}
{%- elif raw.positions is defined -%}
{%- set position -%}
CAST([{% for p in raw.positions %}{{ 'NULL' if p is none else p | int }}{% if not loop.last %}, {% endif %}{% endfor %}] AS INTEGER[])[src + 1]
{%- endset -%}
SELECT * REPLACE ({{ position }} AS src) FROM {{ raw.view }}
    {%- if none in raw.positions %} WHERE {{ position }} IS NOT NULL{% endif %}
{%- else -%}
SELECT {{ raw.position | int }} AS src, * FROM {{ raw.view }}
{%- endif -%}
{%- endmacro %}
{#- unfinished_from_args(args): events.unfinished from an event's args text (a RecordFunction not
    ended on its thread: '"finished": false'), for a reader that parses no args (nesting.sql) and
    for an older lake's events, which lack the column (duckprof/lake.py OLD_LAKE_COLUMNS) -#}
{%- macro unfinished_from_args(args='args') -%}
CASE WHEN ph = 'X' AND contains({{ args }}, '"finished"') AND json_extract_string({{ args }}, '$.finished') = 'false'
     THEN true END
{%- endmacro %}
{%- macro normalized_events(raws, exact={}, nesting=false) -%}
WITH staged AS (
{%- for raw in raws %}
    {% if not loop.first %}UNION ALL {% endif %}{{ staged_source(raw) }}
{%- endfor %}
),
parsed AS (
    SELECT s.src, $first_trace_id + s.src AS trace_id, s.event_id, s.ph, s.cat, s.name, s.pid, s.tid, s.id, s.args,
           {%- if raws | selectattr('exact', 'defined') | selectattr('exact') | list %}
           -- (a chunk read with its exact timestamps: the only raw, without baseTimeNanoseconds)
           CAST($base_ns AS BIGINT[])[s.src + 1] + s.read_ns AS ts_ns_double,
           {%- else %}
           CAST($base_ns AS BIGINT[])[s.src + 1]
               + floor(s.ts)::BIGINT * 1000 + round((s.ts - floor(s.ts)) * 1000)::BIGINT AS ts_ns_double,
           {%- endif %}
           round(s.dur * 1000)::BIGINT AS dur_ns,  -- finite and in range: checked by validate.sql
           {%- if exact %}
           CASE {% for src, table in exact.items() %}WHEN s.src = {{ src }} THEN x{{ src }}.exact_ns {% endfor %}END AS exact_ns,
           {%- endif %}
           json_extract(s.args, [
               {%- for _col, names, _type in arg_columns %}{% for n in names %}'$."{{ n }}"', {% endfor %}{% endfor -%}
               '$."finished"'
           ]) AS a
    FROM staged s
    {%- for src, table in exact.items() %}
    LEFT JOIN {{ table }} x{{ src }} ON s.src = {{ src }} AND x{{ src }}.event_id = s.event_id
    {%- endfor %}
),
timed AS (
    SELECT *,
           {%- if exact %}
           CASE WHEN abs(exact_ns - ts_ns_double) <= 1000 THEN exact_ns ELSE ts_ns_double END AS ts_ns
           {%- else %}
           ts_ns_double AS ts_ns
           {%- endif %}
    FROM parsed
)
SELECT
    trace_id,
    event_id,
    ph,
    CASE
        -- already canonical (every Kineto since ~2021): one IN test, instead of
        -- evaluating lower(cat) and the string compares below for every event
        WHEN cat IN {{ sql_list(canonical_cats) }} THEN cat
        -- no category: memory instants, and the ops and kernels of torch's
        -- pre-Kineto profiler (torch < 1.8: pids "CPU functions" / "CUDA functions")
        WHEN cat IS NULL THEN CASE WHEN name = '[memory]' THEN 'cpu_instant_event'
                                   WHEN ph = 'X' AND pid = 'CPU functions' THEN 'cpu_op'
                                   WHEN ph = 'X' AND pid = 'CUDA functions' THEN 'kernel' END
        ELSE CASE lower(cat)
            WHEN 'operator' THEN 'cpu_op'
            WHEN 'runtime' THEN 'cuda_runtime'
            WHEN 'driver' THEN 'cuda_driver'
            WHEN 'memcpy' THEN 'gpu_memcpy'
            WHEN 'memset' THEN 'gpu_memset'
            WHEN 'async' THEN 'ac2g'
            WHEN 'async_cpu_to_gpu' THEN 'ac2g'
            WHEN 'async_gpu' THEN 'ac2g'
            WHEN 'python function' THEN 'python_function'
            WHEN 'user annotation' THEN 'user_annotation'
            WHEN 'gpu user annotation' THEN 'gpu_user_annotation'
            -- list_contains, not IN: DuckDB turns an IN list into a join
            -- computed for every event, where this is for the few others
            ELSE CASE WHEN list_contains({{ sql_array(canonical_cats) }}, lower(cat))
                  THEN lower(cat) ELSE cat END
        END
    END AS cat,
    cat AS cat_raw,
    name,
    coalesce(try_cast(pid AS BIGINT), try_cast(regexp_extract(pid, '(-?[0-9]+)\s*$', 1) AS BIGINT)) AS pid,
    coalesce(try_cast(tid AS BIGINT), try_cast(regexp_extract(tid, '(-?[0-9]+)\s*$', 1) AS BIGINT)) AS tid,
    pid AS pid_label,
    tid AS tid_label,
    ts_ns,
    dur_ns,
    ts_ns + dur_ns AS end_ns,
    {%- set k = namespace(i=1) %}
    {%- for col, names, type in arg_columns %}
    {%- if type == 'JSON' %}
    a[{{ k.i }}] AS {{ col }},
    {%- else %}
    coalesce({% for n in names %}try_cast({{ unquoted('a[' ~ (k.i + loop.index0) ~ ']::VARCHAR') }} AS {{ type }}){% if not loop.last %}, {% endif %}{% endfor %}
        {%- if col == 'device' %},
             -- pre-Kineto kernels: the thread is the device
             CASE WHEN cat IS NULL AND pid = 'CUDA functions' THEN try_cast(tid AS INTEGER) END
        {%- endif %}) AS {{ col }},
    {%- endif %}
    {%- set k.i = k.i + names | length %}
    {%- endfor %}
    id AS flow_id,
    args,
    -- a RecordFunction not ended on its thread while profiling (see
    -- sql/schema.sql): one more key of the args' one parse (+0.02 CPU-s per
    -- 100 MB); nesting.sql, which parses no args, tests their text first
    -- instead (+0.04-0.07: benchmarks/README.md), the same events
    {%- if nesting %}
    {{ unfinished_from_args() }} AS unfinished
    {%- else %}
    CASE WHEN ph = 'X' AND {{ unquoted('a[' ~ k.i ~ ']::VARCHAR') }} = 'false' THEN true END AS unfinished
    {%- endif %}
FROM timed
{%- endmacro %}
