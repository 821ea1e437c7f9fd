-- Stage 2 of loading: normalise the staged events of one or more traces
-- (stage_events.sql, already numbered in file order and checked by
-- validate.sql) into `events`. Small traces are inserted together: one
-- statement for many files costs far less than one each.
-- Template: raws = the staged views, one per trace, in trace_id order.
-- Parameters: first_trace_id (the first view's trace_id; the others follow),
-- base_ns (BIGINT[], one per view; 0 when ts is absolute).
-- Timestamps: DuckDB parses numbers as DOUBLE; splitting integer and fraction
-- keeps whole nanoseconds exact while ulp(ts) < 1 ns (ts < 2^43 us, true for
-- relative-to-baseTimeNanoseconds traces); see README "Timestamps". Beyond
-- that (fractional absolute us, ~1.7e15), exact_ts.sql redoes ts from the text.
{% from "templates/categories.sql" import canonical_cats, sql_list %}
INSERT INTO events
WITH staged AS (
{%- for raw in raws %}
    {% if not loop.first %}UNION ALL {% endif %}SELECT {{ loop.index0 }} AS src, * FROM {{ raw }}
{%- endfor %}
),
parsed AS (
    SELECT $first_trace_id + src AS trace_id, CAST($base_ns AS BIGINT[])[src + 1] AS base_ns,
           event_id, ph, cat, name, pid, tid, id, args,
           ts, dur,  -- finite and in range: checked by validate.sql
           json_extract(args, ['$."External id"', '$."external id"', '$.correlation',
                               '$.device', '$.stream', '$.stream_id', '$."sycl queue"',
                               '$."Input Dims"', '$."Input type"', '$."Concrete Inputs"']) AS a
    FROM staged
)
SELECT
    trace_id,
    event_id,
    ph,
    CASE
        -- already canonical (every Kineto since ~2021): one IN test, instead of
        -- the lower() and string compares below, for almost every event
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
            ELSE CASE WHEN lower(cat) IN {{ sql_list(canonical_cats) }}
                  THEN lower(cat) ELSE cat END
        END
    END AS cat,
    cat AS cat_raw,
    name,
    coalesce(try_cast(pid AS BIGINT), try_cast(regexp_extract(pid, '(-?[0-9]+)\s*$', 1) AS BIGINT)) AS pid,
    coalesce(try_cast(tid AS BIGINT), try_cast(regexp_extract(tid, '(-?[0-9]+)\s*$', 1) AS BIGINT)) AS tid,
    pid AS pid_label,
    tid AS tid_label,
    base_ns + floor(ts)::BIGINT * 1000 + round((ts - floor(ts)) * 1000)::BIGINT AS ts_ns,
    round(dur * 1000)::BIGINT AS dur_ns,
    base_ns + floor(ts)::BIGINT * 1000 + round((ts - floor(ts)) * 1000)::BIGINT
        + round(dur * 1000)::BIGINT AS end_ns,
    coalesce(try_cast(a[1]::VARCHAR AS BIGINT), try_cast(a[2]::VARCHAR AS BIGINT)) AS external_id,
    try_cast(a[3]::VARCHAR AS BIGINT) AS correlation,
    coalesce(try_cast(trim(a[4]::VARCHAR, '"') AS INTEGER),
             -- pre-Kineto kernels: the thread is the device
             CASE WHEN cat IS NULL AND pid = 'CUDA functions' THEN try_cast(tid AS INTEGER) END) AS device,
    -- Intel XPU names its stream "sycl queue"
    coalesce(try_cast(a[5]::VARCHAR AS BIGINT), try_cast(trim(a[6]::VARCHAR, '"') AS BIGINT),
             try_cast(a[7]::VARCHAR AS BIGINT)) AS stream,
    id AS flow_id,
    a[8] AS input_dims,
    a[9] AS input_types,
    a[10] AS concrete_inputs,
    args
FROM parsed
