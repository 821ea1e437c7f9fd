-- Whether to nest a batch with crossings looked for on every thread at once
-- (nesting.sql, crossing = 'all'): when one of its traces was recorded with
-- with_stack (python_function events), whose python frames almost always
-- cross the ProfilerStep#N spans they open; other traces seldom cross and are
-- nested with crossing = 'check'. Either way the rows are the same: this
-- only saves the second pass. Template: raws (the batch's staged views).
-- Returns stack BOOLEAN.
SELECT EXISTS (
{%- for raw in raws %}
    {% if not loop.first %}UNION ALL {% endif %}SELECT 1 FROM {{ raw }} WHERE cat IN ('python_function', 'python function')
{%- endfor %}
) AS stack
