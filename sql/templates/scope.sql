-- scope: "only this run / this device", written once. Reports get the
-- options run and device (NULL: all); import these with context:
--   from "templates/scope.sql" import in_run, scope with context
-- in_run(param, alias, catalog): the predicate "this row's trace belongs to the
--   run bound as $param" (catalog: '' or an attached database and a dot, for
--   diff's sides).
-- scope(alias): ' AND ...' for the run and the device options that are set
--   (nothing when neither is); alias: a table alias and dot, or ''.
-- run_scope(alias), device_scope(alias): the same for one of the two options.
{% macro in_run(param='run', alias='', catalog='') -%}
{{ alias }}trace_id IN (SELECT trace_id FROM {{ catalog }}trace_files WHERE run = ${{ param }})
{%- endmacro %}

{% macro device_scope(alias='') -%}
{%- if device is not none %} AND {{ alias }}device = $device{% endif -%}
{%- endmacro %}

{% macro run_scope(alias='') -%}
{%- if run is not none %} AND {{ in_run('run', alias) }}{% endif -%}
{%- endmacro %}

{% macro scope(alias='') -%}
{{ run_scope(alias) }}{{ device_scope(alias) }}
{%- endmacro %}
