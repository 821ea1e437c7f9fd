-- Whether to nest a batch with crossings looked for on every thread at once
-- (nesting.sql, crossing = 'all'): when, in one of its traces, a python frame
-- (with_stack) crosses a ProfilerStep#N span: it starts before the step,
-- ends inside it. torch's profiler opens each step inside such a frame, and
-- a thread that crosses there must be nested twice otherwise (crossing =
-- 'check', then 'threads'). Other traces, python frames or not, seldom cross:
-- looking for crossings on all their threads would cost more than it saves.
-- Either way the rows are the same: this only chooses the cheaper plan. Times
-- as parsed (doubles) are close enough for a choice. Template: raws (the
-- batch's staged relations, see normalize.sql; a group of small traces is
-- looked at whole). Returns stack BOOLEAN.
SELECT EXISTS (
{%- for raw in raws %}
    {% if not loop.first %}UNION ALL {% endif %}SELECT 1
    FROM {{ raw.view }} s JOIN {{ raw.view }} f ON f.pid = s.pid AND f.tid = s.tid
    {%- if raw.positions is defined %} AND f.src = s.src{% endif %}
    WHERE s.ph = 'X' AND starts_with(s.name, 'ProfilerStep#')
      AND f.ph = 'X' AND f.cat IN ('python_function', 'python function')
      AND f.ts < s.ts AND f.ts + f.dur > s.ts AND f.ts + f.dur < s.ts + s.dur
{%- endfor %}
) AS stack
