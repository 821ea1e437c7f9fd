-- The key of one host thread for nesting: (trace, pid and tid as written).
-- nesting.sql, nesting_check.sql and nesting_clear.sql import this macro, so
-- the key they pass between them is spelled once. t: a table alias and dot.
{% macro thread_key(t='') -%}
hash({{ t }}trace_id, {{ t }}pid_label, {{ t }}tid_label)
{%- endmacro %}
