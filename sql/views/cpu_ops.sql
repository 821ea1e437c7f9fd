-- cpu_ops: one row per CPU operator (aten::*, autograd, ... : Kineto cat cpu_op / Operator).
-- trace_id        INTEGER  trace (traces.trace_id)
-- event_id        BIGINT   events.event_id
-- name            VARCHAR  operator name, e.g. 'aten::addmm'
-- pid, tid        BIGINT   process and thread
-- ts_ns           BIGINT   start, ns since the epoch
-- dur_ns          BIGINT   total (inclusive) duration, ns
-- end_ns          BIGINT   ts_ns + dur_ns
-- self_ns         BIGINT   dur_ns minus direct children on the thread (ops, runtime calls, ...)
-- depth           INTEGER  number of enclosing host events on the thread
-- parent_id       BIGINT   event_id of the innermost enclosing host event
-- parent_op_id    BIGINT   event_id of the innermost enclosing cpu_op
-- external_id     BIGINT   'External id' (links kernels and runtime calls to this op)
-- sequence_number BIGINT   autograd 'Sequence number' (links forward and backward ops)
-- input_dims      JSON     'Input Dims' (record_shapes), e.g. [[788,768],[768,768]]
-- input_types     JSON     'Input type', e.g. ["c10::BFloat16","float"]
-- concrete_inputs JSON     'Concrete Inputs' (scalar arguments as strings)
-- args            JSON     all args
CREATE OR REPLACE VIEW cpu_ops AS
SELECT e.trace_id, e.event_id, e.name, e.pid, e.tid, e.ts_ns, e.dur_ns, e.end_ns,
       n.self_ns, n.depth, n.parent_id, n.op_id AS parent_op_id, e.external_id,
       try_cast(json_extract_string(e.args, '$."Sequence number"') AS BIGINT) AS sequence_number,
       e.input_dims, e.input_types, e.concrete_inputs, e.args
FROM events e
LEFT JOIN nesting n ON n.trace_id = e.trace_id AND n.event_id = e.event_id
WHERE e.cat = 'cpu_op' AND e.ph = 'X';
