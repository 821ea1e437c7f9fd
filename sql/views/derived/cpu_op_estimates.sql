-- cpu_op_estimates: the FLOP (and byte) estimate of every call of an operator
-- that has a FLOP formula (op_estimates, stored at load per distinct operator
-- signature), whether or not it launched a kernel: what `report ops` counts in
-- its flops column, as torch's key_averages counts FLOPs per operator
-- (with_flops).
--
-- Only operators whose name has a FLOP estimate somewhere (op_estimates) are
-- hashed into their signature (sql/templates/op_signature.sql), so the many
-- operators without a FLOP formula (views, copies, ...) cost nothing here.
-- flops is NULL for a call whose shapes the formula cannot use.
--
-- requires: cpu_ops, op_estimates
--
-- Columns:
-- trace_id    INTEGER  trace
-- event_id    BIGINT   cpu_ops.event_id
-- name        VARCHAR  operator name
-- flops       BIGINT   FLOPs of this call (NULL: unknown)
-- bytes       BIGINT   minimum DRAM traffic of this call, bytes (NULL: unknown)
-- dtype       VARCHAR  canonical dtype of its largest tensor input
-- input_dims  JSON     the call's 'Input Dims' (part of its signature; report ops --group-by-input-shape keys on it)
{% from "templates/op_signature.sql" import op_signature %}
CREATE OR REPLACE VIEW cpu_op_estimates AS
SELECT c.trace_id, c.event_id, c.name, e.flops, e.bytes, e.dtype, c.input_dims
FROM cpu_ops c
JOIN op_estimates e ON e.sig = {{ op_signature('c.') }}
WHERE c.name IN (SELECT name FROM op_estimates WHERE flops IS NOT NULL);
