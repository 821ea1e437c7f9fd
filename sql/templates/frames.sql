-- frames: the Python stack (python_functions) around host events.
--
-- user_frame(calls, keys): for each row of `calls` (a relation with trace_id,
--   pid, tid, ts_ns, end_ns and the `keys` columns that name a row) that has
--   one, the row's keys and `source`: the innermost Python frame
--   'file.py(N): f' on the call's thread that encloses the call (or is it),
--   outside torch's own files (a path with a directory named torch): the
--   user's line that led to the call. Frames such as 'nn.Module: Linear_0'
--   and '<built-in method ...>' are not files. Tested alone in
--   tests/test_sql_macros.py.

{% macro user_frame(calls, keys) -%}
SELECT {% for k in keys %}c.{{ k }}, {% endfor %}arg_max(p.name, (p.ts_ns, p.depth)) AS source
FROM {{ calls }} c
JOIN python_functions p
  ON p.trace_id = c.trace_id AND p.pid = c.pid AND p.tid = c.tid
 AND p.ts_ns <= c.ts_ns AND p.end_ns >= c.end_ns
WHERE regexp_matches(p.name, '\.py\([0-9]+\)')
  AND NOT regexp_matches(p.name, '(^|[/\\])torch[/\\]')
GROUP BY {% for k in keys %}c.{{ k }}{% if not loop.last %}, {% endif %}{% endfor %}
{%- endmacro %}
