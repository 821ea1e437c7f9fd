-- Whether to nest a batch with crossings looked for on every thread at once
-- (nesting.sql, crossing = 'all'): when, in one of its traces, a python frame
-- (with_stack) crosses a user annotation (record_function, ProfilerStep#N):
-- it starts before the annotation and ends inside it. torch's python tracer
-- records the frame that opens a record_function (_record_function_enter_new,
-- a context manager's __enter__) around the annotation's start, so
-- with_stack traces that have annotations cross there (every such trace seen:
-- steps, optimizer and DDP labels, compiled graphs' labels, user labels),
-- and a thread that crosses must be nested twice otherwise (crossing =
-- 'check', then 'threads'). Other traces, python frames or not, seldom cross:
-- looking for crossings on all their threads would cost more than it saves.
-- Either way the rows are the same: this only chooses the cheaper plan. Times
-- as parsed (doubles) are close enough for a choice, and each frame is
-- checked against one annotation only, the last one starting before the
-- frame ends (an ASOF join): the one it crosses when the frame opens it. (A
-- join of every frame with every annotation of its thread was quadratic: 1.2
-- CPU-s on the 1 GB synthetic trace, 1.9 M module-scope frames x 900 steps,
-- for a trace that has no crossing.)
-- Template: raws (the batch's staged relations, see normalize.sql), looked
-- at in one join, each trace's rows told apart by src (one join per relation
-- cost ~20 ms each, 1.2 CPU-s for a job of 1,000 small traces); raws none:
-- the stored events of the traces in the parameter trace_ids (INTEGER[]),
-- their canonical categories and times in ns (nesting.sql reads them so too).
-- Returns stack BOOLEAN.
{% from "load/normalize.sql" import staged_source %}
WITH staged AS (
{%- if raws is none %}
    SELECT trace_id AS src, ph, cat, name, pid_label AS pid, tid_label AS tid, ts_ns AS ts, dur_ns AS dur
    FROM events
    WHERE trace_id BETWEEN list_min($trace_ids) AND list_max($trace_ids) AND list_contains($trace_ids, trace_id)
{%- endif %}
{%- for raw in raws or [] %}
    {% if not loop.first %}UNION ALL {% endif %}SELECT src, ph, cat, name, pid, tid, ts, dur FROM ({{ staged_source(raw) }})
{%- endfor %}
)
SELECT EXISTS (
    SELECT 1
    FROM (SELECT src, pid, tid, ts, ts + dur AS end_ts FROM staged
          WHERE ph = 'X' AND cat IN ('python_function', 'python function')) f
    ASOF JOIN (SELECT src, pid, tid, ts, ts + dur AS end_ts FROM staged
               WHERE ph = 'X' AND (cat IN ('user_annotation', 'user annotation', 'User Annotation')
                                    OR starts_with(name, 'ProfilerStep#'))) s
      ON s.src = f.src AND s.pid = f.pid AND s.tid = f.tid AND f.end_ts > s.ts
    WHERE f.ts < s.ts AND f.end_ts < s.end_ts
) AS stack
