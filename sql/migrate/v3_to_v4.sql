-- Schema version 3 -> 4: the derived tables derived_launches,
-- derived_kernel_estimates, derived_memory_events and derived_call_totals are
-- new: the launches, kernel_estimates, memory_events and call_totals views
-- read them instead of computing their rows at every query. Created here (without zstd: a file in
-- an older storage format refuses it) and filled for every trace by the
-- session after the step, in the same transaction (duckprof.session.refresh_stored:
-- a database without duckprof_meta.derived_hash has every trace's rows
-- computed), since filling them reads the views this step's caller recreates.
-- Run by duckprof.session in one transaction, with the old views dropped first.
CREATE TABLE IF NOT EXISTS derived_launches (
    trace_id INTEGER, event_id BIGINT, kind VARCHAR, name VARCHAR, device INTEGER, stream BIGINT,
    ts_ns BIGINT, dur_ns BIGINT, end_ns BIGINT, correlation BIGINT, launch_event_id BIGINT,
    launch_name VARCHAR, launch_ts_ns BIGINT, launch_dur_ns BIGINT, pid BIGINT, tid BIGINT,
    op_event_id BIGINT, op_name VARCHAR, op_external_id BIGINT, op_link VARCHAR,
    input_dims JSON, input_types JSON, concrete_inputs JSON);
CREATE TABLE IF NOT EXISTS derived_kernel_estimates (
    trace_id INTEGER, event_id BIGINT, name VARCHAR, device INTEGER, stream BIGINT, ts_ns BIGINT,
    dur_ns BIGINT, op_event_id BIGINT, op_name VARCHAR, op_kernels BIGINT, category VARCHAR,
    math_kernel BOOLEAN, op_flops BIGINT, op_bytes BIGINT, flops BIGINT, bytes BIGINT,
    flops_formula VARCHAR, bytes_formula VARCHAR, dtype VARCHAR, dtype_source VARCHAR, peak_dtype VARCHAR);
CREATE TABLE IF NOT EXISTS derived_memory_events (
    trace_id INTEGER, event_id BIGINT, pid BIGINT, tid BIGINT, ts_ns BIGINT, bytes BIGINT,
    total_allocated_bytes BIGINT, total_reserved_bytes BIGINT, device_type INTEGER, device_id INTEGER,
    addr BIGINT);
CREATE TABLE IF NOT EXISTS derived_call_totals (
    trace_id INTEGER, event_id BIGINT, device_ns BIGINT, cpu_mem_bytes BIGINT, device_mem_bytes BIGINT);
