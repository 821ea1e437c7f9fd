-- The operator signatures of traces first_trace_id..last_trace_id that
-- op_estimates does not hold yet, once each: the loader computes their FLOP /
-- byte / dtype estimates in Python (duckprof/estimators/store.py, once per
-- signature, never per event) and stores them with insert_estimates.sql.
-- Parameters: first_trace_id, last_trace_id (INTEGER).
-- sig              UBIGINT  the op_signature macro (sql/templates/op_signature.sql),
--                           op_estimates' key
-- name             VARCHAR  operator name, e.g. 'aten::mm' (as cpu_ops names it: no overload)
-- input_dims       VARCHAR  args."Input Dims" as JSON text (NULL: not recorded)
-- input_types      VARCHAR  args."Input type" as JSON text
-- concrete_inputs  VARCHAR  args."Concrete Inputs" as JSON text
{% from "templates/op_signature.sql" import op_signature, op_base_name %}
SELECT DISTINCT * FROM (
    SELECT {{ op_signature(name=op_base_name('name')) }} AS sig,
           {{ op_base_name('name') }} AS name, input_dims::VARCHAR AS input_dims, input_types::VARCHAR AS input_types,
           concrete_inputs::VARCHAR AS concrete_inputs
    FROM events
    WHERE trace_id BETWEEN $first_trace_id AND $last_trace_id AND cat = 'cpu_op' AND ph = 'X')
WHERE sig NOT IN (SELECT sig FROM op_estimates)
