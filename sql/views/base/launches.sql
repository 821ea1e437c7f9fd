-- launches: every kernel / memcpy / memset with the runtime call that launched
-- it (joined on correlation) and the cpu_op that issued it, with the op's shapes.
--
-- The op is found by External id (the runtime call's, else the kernel's) within
-- the same trace. In some real traces (2022 Kineto, e.g. HTA's test data) the
-- runtime call's External id is just its correlation id, and a match on it
-- would be wrong (some even collide with real op ids). When most runtime calls
-- of a trace have External id = correlation, that trace links every launch
-- to the innermost cpu_op enclosing the runtime call in time on its thread
-- (runtime.op_event_id) instead; other traces fall back to that only when the
-- External id finds no op. op_link says which way each row was linked.
--
-- Computed once per trace at load (sql/load/derived_launches.sql) and stored
-- in the table derived_launches, which this view reads.
--
-- requires: derived_launches
--
-- Columns:
-- trace_id         INTEGER  trace
-- event_id         BIGINT   the device event (gpu_ops.event_id)
-- kind             VARCHAR  'kernel', 'memcpy', 'memset'
-- name             VARCHAR  kernel name
-- device           INTEGER  GPU index
-- stream           BIGINT   stream
-- ts_ns            BIGINT   the device event's start, ns since the epoch
-- dur_ns           BIGINT   its duration, ns
-- end_ns           BIGINT   ts_ns + dur_ns
-- correlation      BIGINT   correlation id
-- launch_event_id  BIGINT   runtime.event_id of the launch call (NULL if not in the trace)
-- launch_name      VARCHAR  e.g. 'cudaLaunchKernel'
-- launch_ts_ns     BIGINT   when the launch call started, ns since the epoch
-- launch_dur_ns    BIGINT   how long the launch call took, ns
-- pid              BIGINT   host process of the launch call
-- tid              BIGINT   host thread of the launch call
-- op_event_id      BIGINT   cpu_ops.event_id of the issuing operator (NULL if none)
-- op_name          VARCHAR  e.g. 'aten::addmm'
-- op_external_id   BIGINT   the operator's 'External id'
-- op_link          VARCHAR  'external_id', 'enclosing', or NULL (no op found)
-- input_dims       JSON     the op's 'Input Dims'
-- input_types      JSON     the op's 'Input type'
-- concrete_inputs  JSON     the op's 'Concrete Inputs'
CREATE OR REPLACE VIEW launches AS
SELECT trace_id, event_id, kind, name, device, stream, ts_ns, dur_ns, end_ns, correlation,
       launch_event_id, launch_name, launch_ts_ns, launch_dur_ns, pid, tid, op_event_id, op_name,
       op_external_id, op_link, input_dims, input_types, concrete_inputs
FROM derived_launches;
