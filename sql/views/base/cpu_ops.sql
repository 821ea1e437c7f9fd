-- cpu_ops: one row per CPU operator (aten::*, autograd, ...: Kineto cat cpu_op,
-- 'Operator' in older traces), with its nesting on its thread.
--
-- requires: events
--
-- Columns:
-- trace_id         INTEGER  trace (trace_files.trace_id)
-- event_id         BIGINT   events.event_id
-- name             VARCHAR  operator name, e.g. 'aten::addmm' (without the overload that
--                           capture_overload_names traces write: 'aten::add.Tensor' is 'aten::add')
-- overload         VARCHAR  that overload, e.g. 'Tensor' (NULL: none written)
-- pid              BIGINT   process
-- tid              BIGINT   thread
-- ts_ns            BIGINT   start, ns since the epoch
-- dur_ns           BIGINT   total (inclusive) duration, ns
-- end_ns           BIGINT   ts_ns + dur_ns
-- self_ns          BIGINT   dur_ns minus the direct children on the thread (ops, runtime calls, ...)
-- depth            INTEGER  number of enclosing host events on the thread
-- parent_event_id  BIGINT   event_id of the innermost enclosing host event (NULL at top level)
-- op_event_id      BIGINT   event_id of the innermost enclosing cpu_op: the op that called this one
-- unfinished       BOOLEAN  true: not ended on its thread while profiling ('"finished": false'):
--                           async in torch, so no one's parent, depth 0, self_ns 0; else NULL
-- external_id      BIGINT   'External id' (links kernels and runtime calls to this op)
-- sequence_number  BIGINT   autograd 'Sequence number' (links forward and backward ops)
-- input_dims       JSON     'Input Dims' (record_shapes), e.g. [[788,768],[768,768]]
-- input_types      JSON     'Input type', e.g. ["c10::BFloat16","float"]
-- concrete_inputs  JSON     'Concrete Inputs' (scalar arguments as strings)
-- args             JSON     all args
{% from "templates/op_signature.sql" import op_base_name, op_overload %}
CREATE OR REPLACE VIEW cpu_ops AS
SELECT trace_id, event_id, {{ op_base_name('name') }} AS name, {{ op_overload('name') }} AS overload, pid, tid, ts_ns, dur_ns, end_ns,
       self_ns, depth, parent_event_id, op_event_id, unfinished, external_id,
       try_cast(json_extract_string(args, '$."Sequence number"') AS BIGINT) AS sequence_number,
       input_dims, input_types, concrete_inputs, args
FROM events
WHERE cat = 'cpu_op' AND ph = 'X';
