-- notes: the notes (what the data cannot support) that several reports share.
-- Each macro renders a query returning note VARCHAR and instead BOOLEAN (see
-- duckprof/reports.py); import with context (they read the run and device
-- options).
-- gpu_notes(need_launches, unlaunched): per trace in scope, "no GPU activity
--   in this trace" (on the device, if one is chosen); with need_launches, per
--   trace whose device activity has no launch call in the trace (then the
--   report has no queue depth for it); with unlaunched, per device whose GPU
--   window (gpu_windows, with the report's --exclude-last-step / --hta) holds
--   device events whose launch call is not in the trace. When no trace in
--   scope has device activity, one line "no GPU activity in this trace",
--   printed instead of the table.
{% from "templates/scope.sql" import run_scope, device_scope with context %}

{% macro where_device() -%}
{%- if device is not none %}' (device ' || $device || ')'{% else %}''{% endif -%}
{%- endmacro %}

{% macro gpu_notes(need_launches=false, unlaunched=false) -%}
WITH t AS (
    SELECT f.trace_id, f.file_name,
           EXISTS (SELECT 1 FROM gpu_ops g WHERE g.trace_id = f.trace_id {{ device_scope('g.') }}) AS has_gpu,
           {%- if need_launches %}
           EXISTS (SELECT 1 FROM gpu_ops g JOIN runtime r ON r.trace_id = g.trace_id AND r.correlation = g.correlation
                   WHERE g.trace_id = f.trace_id {{ device_scope('g.') }}) AS has_launches
           {%- else %}
           true AS has_launches
           {%- endif %}
    FROM trace_files f
    WHERE TRUE {{ run_scope('f.') }}
),
any_gpu AS (SELECT coalesce(bool_or(has_gpu), false) AS yes FROM t)
SELECT note, instead FROM (
    SELECT 0 AS k, trace_id, file_name || ': no GPU activity in this trace' || {{ where_device() }} AS note,
           false AS instead
    FROM t WHERE NOT has_gpu AND (SELECT yes FROM any_gpu)
    {%- if need_launches %}
    UNION ALL
    SELECT 0, trace_id, file_name || ': no launch call in this trace matches its device activity (correlation)'
                        || {{ where_device() }} || ', so no queue depth', false
    FROM t WHERE has_gpu AND NOT has_launches
    {%- endif %}
    {%- if unlaunched %}
    UNION ALL
    SELECT 0, w.trace_id, w.file_name || ': ' || format('{:,}', w.unlaunched) || ' of ' || format('{:,}', w.events)
                          || ' device events on device ' || w.device || ' have no launch call in the trace '
                          || '(launched before the profile began, or by a call it does not record): the GPU '
                          || 'window and busy time count them, the queue depth does not', false
    FROM (SELECT gw.*, t.file_name FROM gpu_windows(exclude_last_step := $exclude_last_step OR $hta, hta := $hta) gw
          JOIN t USING (trace_id)
          WHERE gw.scope = 'device' AND gw.unlaunched > 0 {% if need_launches %}AND t.has_launches {% endif %}{{ device_scope('gw.') }}) w
    {%- endif %}
    UNION ALL
    SELECT 1, NULL, 'no GPU activity in this trace' || {{ where_device() }}
                    {%- if run is not none %} || ' (run ''' || $run || ''')'{% endif %}, true
    WHERE NOT (SELECT yes FROM any_gpu)
)
ORDER BY k, trace_id
{%- endmacro %}
