-- runtime: CUDA/HIP/XPU (and PrivateUse1 backends') runtime and driver calls, and MTIA
-- runtime calls, on host threads.
-- trace_id      INTEGER  trace
-- event_id      BIGINT   events.event_id
-- api           VARCHAR  'cuda_runtime', 'cuda_driver', 'hip_runtime', 'mtia_runtime', ...
-- name          VARCHAR  e.g. 'cudaLaunchKernel', 'cuLaunchKernel', 'hipLaunchKernel'
-- pid, tid      BIGINT   host process and thread
-- ts_ns, dur_ns, end_ns  BIGINT  start (ns since the epoch), duration, end
-- correlation   BIGINT   links to the device activity it launched (gpu_ops.correlation)
-- external_id   BIGINT   'External id' of the enclosing cpu_op (not reliable in 2022 traces)
-- op_id         BIGINT   event_id of the innermost cpu_op enclosing it in time on its thread
-- depth         INTEGER  number of enclosing host events
-- args          JSON     all args (cbid, ...)
CREATE OR REPLACE VIEW runtime AS
SELECT e.trace_id, e.event_id, e.cat AS api, e.name, e.pid, e.tid, e.ts_ns, e.dur_ns, e.end_ns,
       e.correlation, e.external_id, n.op_id, n.depth, e.args
FROM events e
LEFT JOIN nesting n ON n.trace_id = e.trace_id AND n.event_id = e.event_id
WHERE e.ph = 'X' AND e.cat IN ('cuda_runtime', 'cuda_driver', 'hip_runtime', 'hip_driver', 'xpu_runtime',
                              'xpu_driver', 'privateuse1_runtime', 'privateuse1_driver', 'mtia_runtime');
