-- runtime: CUDA/HIP/XPU (and PrivateUse1 backends') runtime and driver calls,
-- and MTIA runtime calls, on host threads.
--
-- requires: events
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   events.event_id
-- api          VARCHAR  'cuda_runtime', 'cuda_driver', 'hip_runtime', 'mtia_runtime', ...
-- name         VARCHAR  e.g. 'cudaLaunchKernel', 'cuLaunchKernel', 'hipLaunchKernel'
-- pid          BIGINT   host process
-- tid          BIGINT   host thread
-- ts_ns        BIGINT   start, ns since the epoch
-- dur_ns       BIGINT   duration, ns
-- end_ns       BIGINT   ts_ns + dur_ns
-- correlation  BIGINT   links to the device activity it launched (gpu_ops.correlation)
-- external_id  BIGINT   'External id' of the enclosing cpu_op (not reliable in 2022 traces)
-- op_event_id  BIGINT   event_id of the innermost cpu_op enclosing it in time on its thread
-- depth        INTEGER  number of enclosing host events
-- args         JSON     all args (cbid, ...)
-- parent_event_id  BIGINT  innermost enclosing host event on the thread (NULL at top level)
-- self_ns      BIGINT   dur_ns minus the direct children on the thread (a runtime call rarely has any)
{% from "templates/categories.sql" import runtime_cats, sql_list %}
CREATE OR REPLACE VIEW runtime AS
SELECT trace_id, event_id, cat AS api, name, pid, tid, ts_ns, dur_ns, end_ns,
       correlation, external_id, op_event_id, depth, args, parent_event_id, self_ns
FROM events
WHERE ph = 'X' AND cat IN {{ sql_list(runtime_cats) }};
