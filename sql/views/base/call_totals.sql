-- call_totals: per host call, the device time launched from inside it and the memory allocated during it.
--
-- What report ops and report memory --ops roll up per call (torch's
-- key_averages "Device total" and "CPU Mem" / "Device Mem"): device_ns is
-- the duration of the kernels, memcpys and memsets launched by the calls on
-- the same thread that start in [start, end) of this one (a launch belongs to
-- its runtime call's innermost enclosing cpu_op, or to the user annotation or
-- operator that is the runtime call's parent); the memory columns are the
-- bytes of the [memory] events at times in [start, end], on any thread of
-- its process (torch's MemRecordsAcc.in_interval), net of frees. Calls are cpu_ops, user
-- annotations, Python functions and runtime calls; only those with some
-- device time or memory have a row. Computed once per trace at load
-- (sql/load/derived_call_totals.sql) and stored in the table
-- derived_call_totals, which this view reads.
--
-- requires: derived_call_totals
--
-- Columns:
-- trace_id          INTEGER  trace
-- event_id          BIGINT   the call (cpu_ops, user_annotations, python_functions or runtime event_id)
-- device_ns         BIGINT   device time launched from within the call on its thread, ns
-- cpu_mem_bytes     BIGINT   bytes of CPU [memory] events during the call, any thread of its process (net)
-- device_mem_bytes  BIGINT   bytes of device [memory] events during the call, any thread of its process (net)
CREATE OR REPLACE VIEW call_totals AS
SELECT trace_id, event_id, device_ns, cpu_mem_bytes, device_mem_bytes
FROM derived_call_totals;
