-- duckprof database schema: the raw tables every view and report reads.
-- Created once per database; duckprof_meta.schema_version guards compatibility.

CREATE TABLE IF NOT EXISTS duckprof_meta (
    key   VARCHAR PRIMARY KEY,  -- 'schema_version', 'created_by'
    value VARCHAR
);

-- traces: one row per loaded trace file.
CREATE TABLE IF NOT EXISTS traces (
    trace_id        INTEGER PRIMARY KEY,  -- id used by every other table
    run             VARCHAR NOT NULL,     -- run label (a run groups the ranks of one job)
    rank            INTEGER,              -- distributedInfo.rank, else from the file name, else NULL
    path            VARCHAR NOT NULL,     -- absolute path at load time
    size_bytes      BIGINT,               -- file size on disk
    json_bytes      BIGINT,               -- uncompressed JSON size
    content_hash    VARCHAR NOT NULL,     -- sha256 of the file bytes, hex (reload detection)
    loaded_at       TIMESTAMP,            -- when it was loaded (UTC)
    base_time_ns    BIGINT,               -- baseTimeNanoseconds, NULL when ts is absolute
    schema_version  VARCHAR,              -- the trace's own schemaVersion
    event_count     BIGINT,               -- rows in events for this trace
    salvaged_bytes  BIGINT,               -- bytes dropped from a truncated file (--salvage), else 0
    metadata        JSON,                 -- every top-level key except traceEvents
    first_ts_ns     BIGINT,               -- earliest start of a complete event (ph X, dur >= 0), ns
    last_end_ns     BIGINT                -- latest end of a complete event, ns: the trace's window
);

-- devices: one row per entry of the trace's deviceProperties (computeProperties in PyTorch 1.8 traces).
CREATE TABLE IF NOT EXISTS devices (
    trace_id               INTEGER,
    device                 INTEGER,  -- device index (deviceProperties.id)
    name                   VARCHAR,  -- e.g. 'NVIDIA A100-SXM4-80GB'
    total_global_mem_bytes BIGINT,
    compute_major          INTEGER,
    compute_minor          INTEGER,
    num_sms                INTEGER,  -- SMs (NVIDIA) or compute units (AMD)
    properties             JSON      -- the full deviceProperties entry
);

-- events: every trace event, normalised (see README, "Schema").
-- The JSON columns hold most of the bytes; zstd writes them faster than
-- DuckDB's default string compression, and smaller (measured in
-- benchmarks/README.md). A database file in a storage format older than
-- DuckDB 1.2 cannot use zstd: duckprof then creates it without the clause.
CREATE TABLE IF NOT EXISTS events (
    trace_id        INTEGER,
    event_id        BIGINT,   -- unique within the trace
    ph              VARCHAR,  -- phase: X complete, i instant, s/f/t flow, M metadata, ...
    cat             VARCHAR,  -- canonical category (kernel, cpu_op, cuda_runtime, ac2g, ...)
    cat_raw         VARCHAR,  -- category as written in the file
    name            VARCHAR,
    pid             BIGINT,   -- pid as an integer ('stream 7' -> 7; NULL when not numeric)
    tid             BIGINT,   -- tid as an integer, same rule
    pid_label       VARCHAR,  -- pid exactly as written ('Spans', '', '2910249')
    tid_label       VARCHAR,
    ts_ns           BIGINT,   -- start, integer ns since the epoch (baseTimeNanoseconds applied)
    dur_ns          BIGINT,   -- duration, ns (NULL for events without dur)
    end_ns          BIGINT,   -- ts_ns + dur_ns
    external_id     BIGINT,   -- args 'External id' / 'external id'
    correlation     BIGINT,   -- args correlation
    device          INTEGER,  -- args device (pre-Kineto kernels: their tid)
    stream          BIGINT,   -- args stream (or stream_id; Intel XPU: 'sycl queue')
    flow_id         VARCHAR,  -- id of flow events (ph s/f/t)
    input_dims      JSON USING COMPRESSION zstd,  -- args 'Input Dims' (cpu_op)
    input_types     JSON USING COMPRESSION zstd,  -- args 'Input type'
    concrete_inputs JSON USING COMPRESSION zstd,  -- args 'Concrete Inputs'
    args            JSON USING COMPRESSION zstd,  -- all args, as written
    -- interval nesting of host (CPU-side) complete events per thread, computed
    -- at load (sql/load/nesting.sql); NULL for other events
    parent_event_id BIGINT,   -- innermost enclosing host event on the same thread (NULL at top level)
    depth           INTEGER,  -- number of enclosing host events
    self_ns         BIGINT,   -- dur_ns minus the durations of direct children
    op_event_id     BIGINT,   -- innermost enclosing cpu_op (excluding itself), NULL if none
    -- a RecordFunction (cpu_op or user annotation) not ended on its thread while
    -- profiling: ended on another thread or still open at the stop, args
    -- '"finished": false' (the trace then ends it at the profiler's stop). torch
    -- calls it async and leaves it out of its tree, and so does the nesting:
    -- no parent, no children, depth 0, self_ns 0. true for those, else NULL
    unfinished      BOOLEAN
);

-- op_estimates: FLOP / byte / dtype estimates per distinct operator signature,
-- computed at load by the duckprof/estimators package and stored, so a plain DuckDB
-- client sees them. Join on sig (see the launches view).
CREATE TABLE IF NOT EXISTS op_estimates (
    sig             UBIGINT PRIMARY KEY,  -- hash(name, input_dims, input_types, concrete_inputs)
    name            VARCHAR,
    input_dims      VARCHAR,
    input_types     VARCHAR,
    concrete_inputs VARCHAR,
    flops           BIGINT,   -- NULL: no formula for this op, or no shapes recorded
    bytes           BIGINT,   -- minimum DRAM traffic (inputs read once, outputs written once)
    dtype           VARCHAR,  -- canonical dtype of the largest tensor input (fp32, bf16, ...)
    flops_formula   VARCHAR,  -- the estimator that counted flops: 'gemm', 'conv', 'conv_backward',
                              -- 'attention', 'attention_causal' (duckprof/estimators/<family>.py)
    bytes_formula   VARCHAR   -- the rule that gave bytes (estimators/traffic.py): 'elementwise',
                              -- 'reduction', 'in_place', 'out', 'copy', 'write_only', 'view',
                              -- 'triton_buffers', or the FLOP family whose outputs it counts
);

-- device_peaks: datasheet peaks per device model (dense, no sparsity), seeded at
-- database creation from duckprof/data/peaks.csv (duckprof.peaks.seed_peaks); a newer
-- duckprof adds the devices its table gained when it opens the database to load.
-- Add rows for devices duckprof does not know (a lower priority wins); the
-- device_peak view matches each traced device to one row.
CREATE TABLE IF NOT EXISTS device_peaks (
    priority             INTEGER,  -- lower wins when several rows match
    device_pattern       VARCHAR,  -- case-insensitive RE2 regex searched in deviceProperties name
    device               VARCHAR,  -- model, e.g. 'NVIDIA H100 SXM5' (unique)
    vendor               VARCHAR,  -- 'NVIDIA', 'AMD', ...
    memory_gb            DOUBLE,   -- marketed memory, GB
    sm_count             INTEGER,  -- SMs (NVIDIA) or compute units (AMD)
    fp64_tflops          DOUBLE,   -- dense peaks, TFLOP/s (NULL: no published figure)
    fp32_tflops          DOUBLE,
    tf32_tflops          DOUBLE,
    bf16_tflops          DOUBLE,
    fp16_tflops          DOUBLE,
    fp8_tflops           DOUBLE,
    int8_tops            DOUBLE,   -- TOP/s
    fp4_tflops           DOUBLE,
    dram_gbps            DOUBLE,   -- DRAM bandwidth, GB/s (1e9 bytes/s)
    fallback_mem_gib_min DOUBLE,   -- used when no pattern matches a device name: match on
    fallback_mem_gib_max DOUBLE,   -- totalGlobalMem / 2^30 in [min, max] and numSms = sm_count
    source               VARCHAR   -- where the numbers come from (URL)
);

-- interconnect_peaks: the GPU-to-GPU link bandwidth of a device model, per GPU
-- and per direction (what NCCL's bus bandwidth approaches on one node), seeded
-- at database creation from duckprof/data/interconnect.csv like device_peaks;
-- joined to a traced device through device_peaks.device (the
-- trace_interconnects view). Add rows for models duckprof does not list.
CREATE TABLE IF NOT EXISTS interconnect_peaks (
    device        VARCHAR,  -- device_peaks.device, e.g. 'NVIDIA A100 SXM4 80GB'
    interconnect  VARCHAR,  -- e.g. 'NVLink 3 (12 links)'
    gbps          DOUBLE,   -- per GPU, per direction, GB/s (1e9 bytes/s)
    source        VARCHAR   -- where the number comes from (URL)
);

-- run_tags: what users say about a run (`duckprof load --tag k=v`,
-- `duckprof tag RUN k=v`): one row per run and key.
CREATE TABLE IF NOT EXISTS run_tags (
    run     VARCHAR NOT NULL,  -- traces.run
    key     VARCHAR NOT NULL,  -- e.g. 'commit'
    value   VARCHAR NOT NULL,  -- e.g. 'abc123' (text, as given)
    set_at  TIMESTAMP,         -- when it was last set (UTC)
    PRIMARY KEY (run, key)
);

-- trace_facts: facts about each trace computed from its events once, right
-- after it is loaded (the trace_summary view, stored), so that the runs view
-- lists them without reading events. A trace loaded without them (a load cut
-- short) gets them at the next load or migrate.
CREATE TABLE IF NOT EXISTS trace_facts (
    trace_id       INTEGER,  -- traces.trace_id
    devices        INTEGER,  -- devices with device activity (kernels, memcpys, memsets)
    steps          BIGINT,   -- ProfilerStep#N annotations
    step_total_ns  BIGINT,   -- their summed duration, ns
    step_max_ns    BIGINT,   -- the longest, ns
    busy_ns        BIGINT,   -- union of the device activity per device, summed over devices, ns
    window_ns      BIGINT    -- first device event start to last end per device, summed, ns
);

-- Derived tables: what the launches, kernel_estimates, memory_events and
-- call_totals views return, computed once per trace in the load's transaction (sql/load/derived_*.sql,
-- duckprof.session.fill_derived) instead of at every query: a report reads
-- stored rows. Same columns as the views, which select from them (see each
-- view's header for the columns). Recomputed for every trace when a newer
-- duckprof computes them differently (duckprof_meta.derived_hash), as
-- op_estimates is; `duckprof rm` deletes a run's rows.
CREATE TABLE IF NOT EXISTS derived_launches (
    trace_id         INTEGER,
    event_id         BIGINT,   -- the device event (kernel, memcpy, memset)
    kind             VARCHAR,
    name             VARCHAR,
    device           INTEGER,
    stream           BIGINT,
    ts_ns            BIGINT,
    dur_ns           BIGINT,
    end_ns           BIGINT,
    correlation      BIGINT,
    launch_event_id  BIGINT,   -- the runtime call that launched it
    launch_name      VARCHAR,
    launch_ts_ns     BIGINT,
    launch_dur_ns    BIGINT,
    pid              BIGINT,
    tid              BIGINT,
    op_event_id      BIGINT,   -- the cpu_op that issued it
    op_name          VARCHAR,
    op_external_id   BIGINT,
    op_link          VARCHAR,
    input_dims       JSON USING COMPRESSION zstd,
    input_types      JSON USING COMPRESSION zstd,
    concrete_inputs  JSON USING COMPRESSION zstd
);

CREATE TABLE IF NOT EXISTS derived_kernel_estimates (
    trace_id       INTEGER,
    event_id       BIGINT,   -- the kernel
    name           VARCHAR,
    device         INTEGER,
    stream         BIGINT,
    ts_ns          BIGINT,
    dur_ns         BIGINT,
    op_event_id    BIGINT,
    op_name        VARCHAR,
    op_kernels     BIGINT,
    category       VARCHAR,
    math_kernel    BOOLEAN,
    op_flops       BIGINT,
    op_bytes       BIGINT,
    flops          BIGINT,   -- this kernel's share of op_flops
    bytes          BIGINT,   -- this kernel's share of op_bytes
    flops_formula  VARCHAR,
    bytes_formula  VARCHAR,
    dtype          VARCHAR,
    dtype_source   VARCHAR,
    peak_dtype     VARCHAR
);

CREATE TABLE IF NOT EXISTS derived_memory_events (
    trace_id               INTEGER,
    event_id               BIGINT,   -- the '[memory]' instant event
    pid                    BIGINT,
    tid                    BIGINT,
    ts_ns                  BIGINT,
    bytes                  BIGINT,   -- args Bytes, and the other args parsed once
    total_allocated_bytes  BIGINT,
    total_reserved_bytes   BIGINT,
    device_type            INTEGER,
    device_id              INTEGER,
    addr                   BIGINT
);

CREATE TABLE IF NOT EXISTS derived_call_totals (
    trace_id          INTEGER,
    event_id          BIGINT,   -- a host call (cpu_op, user annotation, Python function, runtime call)
    device_ns         BIGINT,   -- device time launched by the calls on its thread starting inside it
    cpu_mem_bytes     BIGINT,   -- bytes of the CPU [memory] events during it, any thread of its process
    device_mem_bytes  BIGINT    -- bytes of the device [memory] events during it, any thread of its process
);

-- report_results: the results of the reports a `duckprof html` page shows,
-- stored by the first page of a run on a writable database file and read by
-- every later page of that run instead of running the reports again
-- (duckprof/html/store.py). One row per report run: its rows exactly as the
-- report returned them. inputs_key names everything they were computed from
-- (the run's traces, the peaks tables, the run's tags, duckprof_meta,
-- duckprof's SQL and code, DuckDB's version): a page whose key differs
-- computes its results again and replaces the run's rows; `duckprof rm`
-- deletes a run's rows (and those of pages of every run).
CREATE TABLE IF NOT EXISTS report_results (
    run         VARCHAR,   -- the page's run; NULL: a page of every run of the database
    inputs_key  VARCHAR,   -- hash of what the results were computed from (see above)
    report      VARCHAR,   -- report name, e.g. 'gpu-time'
    options     VARCHAR,   -- its options as JSON, e.g. '{"buckets": 300}' (the run is in run)
    columns     VARCHAR[], -- the result's columns, in order
    rows_json   VARCHAR,   -- the rows: a JSON array of arrays, one value per column
    notes       VARCHAR[], -- the report's notes
    instead     VARCHAR[], -- the lines shown instead of an empty table
    stored_at   TIMESTAMP  -- when the page stored it (UTC)
);
