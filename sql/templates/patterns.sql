-- patterns: what the rule files of `report patterns` (sql/reports/patterns/)
-- share. Import with context (the macros read the run option):
--   from "templates/patterns.sql" import host_tree, skipped_unless with context
--
-- list_key(t): the sibling list an event of host_events t is in: its parent,
--   or (-1 - tid) for the top level of its thread (torch's tid_root).
-- annotations(names): record_function ranges whose name is LIKE one of
--   `names` (a list of SQL patterns), from host_events: user annotations, and
--   operators for traces of 2021 and before, which wrote them as operators.
--   Columns: those of host_events and is_op (an operator: it may carry a
--   'Call stack').
-- skipped_unless(needs): the @skipped query of a rule: one row (trace_id,
--   reason) per trace of the run that lacks a capability in `needs` (a list of
--   'gpu', 'kernels', 'shapes', 'stacks', 'steps').
-- has_stacks(t): SQL predicate: trace t.trace_id has Python frames (host_events).
-- has_gpu(t): SQL predicate: trace t.trace_id has a GPU: GPU activity, or a
--   deviceProperties entry (a GPU recorded without its activity).
-- rule_fix(r, t): a rule's fix on a trace: the rules table r's fix_no_gpu
--   (the fix-no-gpu: of its header) when trace t has no GPU and the rule has one,
--   else its fix (t: a row of trace_bases(gpu=true), or any row with has_gpu).
-- user_frame(col): SQL predicate: col names a Python frame of user code,
--   'file.py(line): function' outside torch/ (torch's source_code_location
--   skips torch's own files the same way).
-- sources(hits): where in the user's code each row of `hits` (rule,
--   trace_id, event_id, pid, tid, host_ts_ns, op_event_id) happened: the
--   innermost user frame (python_function) around host_ts_ns on its thread,
--   else, in traces without Python frames, the first user frame of the 'Call
--   stack' of op_event_id (torch before 2.0, record_shapes with with_stack).
--   Rows: rule, trace_id, event_id, source (NULL: no stack). Torch's
--   source_code_location reports the line of the call site in the caller
--   (file:line), which the trace does not keep; a frame here reads
--   'file.py(line of its def): function'.
-- device_idle(): the gaps in which no stream of a device runs anything:
--   gpu_idle_intervals' scope 'device' (the same merging, HTA's), from
--   gpu_activity, which the patterns report computes once for all its rules
--   (the view gpu_idle_intervals computes gpu_activity again, and the scope
--   'stream' too). Rows: trace_id, device, start_ns, end_ns, dur_ns,
--   next_event_id (the device event that ends the gap), next_launch_ts_ns
--   (the start of its launch call; NULL: not in the trace). leading=true: also
--   the gap before a device's first activity (start_ns NULL), and from_ns,
--   start_ns or the smallest BIGINT there (a key for ASOF joins). When the
--   rules run together and two or more of them use it, the runner computes
--   device_idle(leading=true) once, as a CTE `device_idle` (render variable
--   shared_ctes, reports.SHARED_CTES), and the macro reads that. On a
--   connection that holds gpu_busy_intervals computed (render variable
--   materialized: the page, html/page.py share_view) the gaps are those
--   between its scope 'device' intervals, merged the same way (same order,
--   first_event_id the event that opens an interval), and nothing is merged
--   again.
-- launch_calls(src): the rows of src (gpu_activity's rows, or rows with its
--   trace_id, event_id and launch_event_id) with their launch call's columns
--   from host_events (NULL: the call is not in the trace): call_event_id,
--   call_name, call_pid, call_tid, call_ts_ns, call_dur_ns,
--   call_parent_event_id. When two or more chosen rules use it (shared:
--   launched), the runner joins every device event of the run to its call once,
--   as a CTE `launched` (launched()), and the macro looks its rows up there;
--   else it joins src's rows to host_events.
-- matmuls(): the run's matrix-multiplication operators (cpu_op named aten::mm,
--   addmm, bmm, baddbmm, addbmm, _addmm_activation) with their input types and
--   dims, read once when two or more chosen rules use them (shared: matmuls).
--   Columns: trace_id, event_id, name, pid, tid, ts_ns, dur_ns, input_types,
--   input_dims.
-- The findings (patterns.sql, patterns_events.sql):
-- stepped_hits(result): the rules' matches of the traces they could run on
--   (the temp tables result_hits less result_skipped), each with the step its host
--   time falls in (step, NULL outside the steps).
-- trace_bases(gpu): per trace in the run: run, rank, first_ts_ns and base_ns,
--   the time findings are a share of: the sum of its steps, else wall_ns; with
--   gpu=true also has_gpu (has_gpu()).
-- severity(stake, base, declared): 'high' when stake >= $high_pct % of base,
--   'medium' when >= $medium_pct %, else 'low'; `declared` when stake is NULL.
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/intervals.sql" import enclosing, merged_intervals %}

{% macro list_key(t) -%}
coalesce({{ t }}.parent_event_id, -1 - {{ t }}.tid)
{%- endmacro %}

{% macro annotations(names) -%}
SELECT *, cat = 'cpu_op' AS is_op
FROM host_events
WHERE cat IN ('user_annotation', 'cpu_op')
  AND ({% for n in names %}name LIKE '{{ n }}'{% if not loop.last %} OR {% endif %}{% endfor %}) {{ run_scope() }}
{%- endmacro %}

{% macro has_stacks(t) -%}
EXISTS (SELECT 1 FROM host_events py WHERE py.trace_id = {{ t }}.trace_id AND py.cat = 'python_function')
{%- endmacro %}

{% macro has_gpu(t) -%}
(EXISTS (SELECT 1 FROM gpu_ops g WHERE g.trace_id = {{ t }}.trace_id)
 OR EXISTS (SELECT 1 FROM trace_devices d WHERE d.trace_id = {{ t }}.trace_id))
{%- endmacro %}

{% macro rule_fix(r, t) -%}
CASE WHEN {{ t }}.has_gpu THEN {{ r }}.fix ELSE coalesce({{ r }}.fix_no_gpu, {{ r }}.fix) END
{%- endmacro %}

{% macro user_frame(col) -%}
(regexp_matches({{ col }}, '^[^<].*\(\d+\): ') AND NOT regexp_matches({{ col }}, '(^|/)torch/'))
{%- endmacro %}

{%- set _needs = {
    'gpu': ("EXISTS (SELECT 1 FROM gpu_ops g WHERE g.trace_id = f.trace_id)",
            'no GPU activity in this trace'),
    'kernels': ("EXISTS (SELECT 1 FROM kernels k WHERE k.trace_id = f.trace_id)",
                'no GPU kernels in this trace'),
    'shapes': ("EXISTS (SELECT 1 FROM cpu_ops o WHERE o.trace_id = f.trace_id AND o.input_types IS NOT NULL)",
               'no input shapes or types (record with record_shapes=True)'),
    'stacks': (has_stacks('f'), 'no Python stacks (record with with_stack=True)'),
    'steps': ("EXISTS (SELECT 1 FROM steps s WHERE s.trace_id = f.trace_id)",
              'no ProfilerStep#N annotations (call prof.step() once per iteration)'),
} %}

{% macro skipped_unless(needs) -%}
{%- for n in needs %}
SELECT f.trace_id, '{{ _needs[n][1] }}' AS reason
FROM trace_files f
WHERE NOT {{ _needs[n][0] }} {{ run_scope('f.') }}
{%- if not loop.last %}
UNION ALL
{%- endif %}
{%- endfor %}
{%- endmacro %}

{% macro sources(hits) -%}
WITH src_points AS (
    SELECT trace_id, pid, tid, rule, event_id, op_event_id, host_ts_ns AS ts_ns, host_ts_ns AS end_ns,
           row_number() OVER () AS point_id
    FROM {{ hits }}
),
src_frames AS (
    SELECT trace_id, pid, tid, event_id AS span_id, depth, ts_ns, end_ns, name
    FROM host_events
    WHERE cat = 'python_function' AND {{ user_frame('name') }}
      AND trace_id IN (SELECT DISTINCT trace_id FROM src_points)
),
by_frame AS (
    SELECT e.trace_id, e.point_id, arg_max(f.name, e.span_depth) AS frame
    FROM ({{ enclosing('src_points', 'src_frames', ['trace_id', 'pid', 'tid']) | indent(10) }}) e
    JOIN src_frames f ON f.trace_id = e.trace_id AND f.span_id = e.span_id
    GROUP BY e.trace_id, e.point_id
),
by_stack AS (
    SELECT p.point_id,
           list_filter(string_split(o.args->>'Call stack', ';'), lambda x: {{ user_frame('x') }})[1] AS frame
    FROM src_points p
    JOIN cpu_ops o ON o.trace_id = p.trace_id AND o.event_id = p.op_event_id
    WHERE p.trace_id NOT IN (SELECT trace_id FROM src_frames)
)
SELECT p.rule, p.trace_id, p.event_id, coalesce(f.frame, s.frame) AS source
FROM src_points p
LEFT JOIN by_frame f USING (trace_id, point_id)
LEFT JOIN by_stack s USING (point_id)
{%- endmacro %}

{% macro stepped_hits(result) -%}
SELECT h.*, CASE WHEN h.host_ts_ns < st.end_ns THEN st.step END AS step
FROM {{ result }}_hits h
ASOF LEFT JOIN steps st ON st.trace_id = h.trace_id AND h.host_ts_ns >= st.ts_ns
WHERE NOT EXISTS (SELECT 1 FROM {{ result }}_skipped s WHERE s.rule = h.rule AND s.trace_id = h.trace_id)
{%- endmacro %}

{% macro trace_bases(gpu=false) -%}
SELECT f.trace_id, f.run, f.rank, f.first_ts_ns, coalesce(s.step_ns, f.wall_ns) AS base_ns
       {%- if gpu %}, {{ has_gpu('f') }} AS has_gpu{% endif %}
FROM trace_files f
LEFT JOIN (SELECT trace_id, sum(dur_ns) AS step_ns FROM steps GROUP BY trace_id) s USING (trace_id)
WHERE TRUE {{ run_scope('f.') }}
{%- endmacro %}

{% macro severity(stake, base, declared) -%}
CASE WHEN {{ stake }} IS NULL THEN {{ declared }}
     WHEN 100.0 * {{ stake }} / nullif({{ base }}, 0) >= $high_pct THEN 'high'
     WHEN 100.0 * {{ stake }} / nullif({{ base }}, 0) >= $medium_pct THEN 'medium'
     ELSE 'low' END
{%- endmacro %}

{% macro device_idle(leading=false) -%}
{%- if shared_ctes is defined and 'device_idle' in shared_ctes %}
SELECT trace_id, device, start_ns, end_ns, dur_ns, next_event_id, next_launch_ts_ns{% if leading %}, from_ns{% endif %}
FROM device_idle
{%- else %}
SELECT trace_id, device, start_ns, end_ns, end_ns - start_ns AS dur_ns, next_event_id, next_launch_ts_ns
{%- if leading %}, coalesce(start_ns, -9223372036854775807) AS from_ns{% endif %}
FROM (
    SELECT trace_id, device, lag(end_ns) OVER (PARTITION BY trace_id, device ORDER BY interval_no) AS start_ns,
           start_ns AS end_ns, next_event_id, next_launch_ts_ns
    {%- if materialized is defined and 'gpu_busy_intervals' in materialized %}
    FROM (SELECT trace_id, device, interval_no, start_ns, end_ns, first_event_id AS next_event_id,
                 first_launch_ts_ns AS next_launch_ts_ns
          FROM gpu_busy_intervals WHERE scope = 'device' {{ run_scope() }})
    {%- else %}
    FROM ({{ merged_intervals('(SELECT * FROM gpu_activity WHERE TRUE ' ~ run_scope() ~ ')', ['trace_id', 'device'],
                              order=['launch_ts_ns NULLS LAST', 'event_id'],
                              firsts={'next_event_id': 'event_id', 'next_launch_ts_ns': 'launch_ts_ns'}) }})
    {%- endif %}
)
{%- endif %}
{%- if not leading %}
WHERE start_ns IS NOT NULL
{%- endif %}
{%- endmacro %}


{% macro launched() -%}
SELECT a.trace_id, a.event_id, h.event_id AS call_event_id, h.name AS call_name, h.pid AS call_pid,
       h.tid AS call_tid, h.ts_ns AS call_ts_ns, h.dur_ns AS call_dur_ns, h.parent_event_id AS call_parent_event_id
FROM gpu_activity a
JOIN host_events h ON h.trace_id = a.trace_id AND h.event_id = a.launch_event_id
WHERE TRUE {{ run_scope('a.') }}
{%- endmacro %}

{% macro launch_calls(src) -%}
{%- if shared_ctes is defined and 'launched' in shared_ctes %}
SELECT s.*, l.call_event_id, l.call_name, l.call_pid, l.call_tid, l.call_ts_ns, l.call_dur_ns,
       l.call_parent_event_id
FROM {{ src }} s
LEFT JOIN launched l ON l.trace_id = s.trace_id AND l.event_id = s.event_id
{%- else %}
SELECT s.*, h.event_id AS call_event_id, h.name AS call_name, h.pid AS call_pid, h.tid AS call_tid,
       h.ts_ns AS call_ts_ns, h.dur_ns AS call_dur_ns, h.parent_event_id AS call_parent_event_id
FROM {{ src }} s
LEFT JOIN host_events h ON h.trace_id = s.trace_id AND h.event_id = s.launch_event_id
{%- endif %}
{%- endmacro %}

{% macro matmuls() -%}
{%- if shared_ctes is defined and 'matmuls' in shared_ctes %}
SELECT * FROM matmuls
{%- else %}
SELECT o.trace_id, o.event_id, o.name, o.pid, o.tid, o.ts_ns, o.dur_ns, o.input_types, o.input_dims
FROM host_events o
WHERE o.cat = 'cpu_op' AND o.name IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm', 'aten::addbmm',
                                      'aten::_addmm_activation')
  {{ run_scope('o.') }}
{%- endif %}
{%- endmacro %}
