-- op_signature: the key of an operator's estimate in op_estimates: its name,
-- input shapes, input dtypes and concrete inputs hashed into one UBIGINT.
-- The loader stores estimates under it (sql/load/op_signatures.sql) and
-- kernel_estimates joins on it, so the two must hash the same four values.
-- t: a table alias and dot ('' for none); name: the column holding the op name.
{% macro op_signature(t='', name='name') -%}
hash({{ t }}{{ name }}, {{ t }}input_dims::VARCHAR, {{ t }}input_types::VARCHAR, {{ t }}concrete_inputs::VARCHAR)
{%- endmacro %}
{#- op_base_name(x) / op_overload(x): an operator name written with its overload, as torch writes
    it with _ExperimentalConfig(capture_overload_names=True) ('aten::add.Tensor',
    'aten::sum.dim_IntList'; the default overload keeps the plain name), split into the name torch's
    key_averages() keys it by ('aten::add') and the overload ('Tensor'; NULL: none written). Only a
    'namespace::op.overload' name is split (the contains() test spares the pattern on most names). -#}
{% macro op_base_name(x) -%}
CASE WHEN contains({{ x }}, '.') AND regexp_matches({{ x }}, '^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z0-9_]+\.[A-Za-z0-9_]+$')
     THEN split_part({{ x }}, '.', 1) ELSE {{ x }} END
{%- endmacro %}
{% macro op_overload(x) -%}
CASE WHEN contains({{ x }}, '.') AND regexp_matches({{ x }}, '^[A-Za-z_][A-Za-z0-9_]*::[A-Za-z0-9_]+\.[A-Za-z0-9_]+$')
     THEN split_part({{ x }}, '.', 2) END
{%- endmacro %}
