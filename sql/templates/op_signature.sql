-- op_signature: the key of an operator's estimate in op_estimates: its name,
-- input shapes, input dtypes and concrete inputs hashed into one UBIGINT.
-- The loader stores estimates under it (sql/load/op_signatures.sql) and
-- kernel_estimates joins on it, so the two must hash the same four values.
-- t: a table alias and dot ('' for none); name: the column holding the op name.
{% macro op_signature(t='', name='name') -%}
hash({{ t }}{{ name }}, {{ t }}input_dims::VARCHAR, {{ t }}input_types::VARCHAR, {{ t }}concrete_inputs::VARCHAR)
{%- endmacro %}
