-- zero-grad: gradients zeroed (one aten::zero_ per parameter) instead of set to
-- None: zero_grad(set_to_none=False), the default before torch 2.0.
--
-- Why it matters: zeroing writes every gradient (a kernel per parameter on a
-- GPU) and the next backward then adds into it; set to None, the memory is
-- not touched and backward writes the gradient directly.
-- How to fix: optimizer.zero_grad(set_to_none=True) / model.zero_grad(set_to_none=True)
-- (the default since torch 2.0), unless the code reads .grad before backward.
-- The trace must contain: Python stacks (with_stack=True), or else the
-- Optimizer.zero_grad#<name>.zero_grad annotations torch records.
--
-- Matching is torch's GradNotSetToNonePattern with stacks: an event whose
-- name ends with ': zero_grad' (optimizer's or nn.Module's zero_grad frame)
-- with an aten::zero_ under it whose parent is not aten::zeros. Traces
-- without Python stacks (where torch finds nothing): the
-- Optimizer.zero_grad#<name>.zero_grad annotations instead of the frames.
-- Time at stake: the duration of those aten::zero_ calls (host time; their
-- kernels, if any, are not counted).
--
-- severity: low
-- fix: zero_grad(set_to_none=True), the default since torch 2.0
-- method: the duration of the aten::zero_ calls under zero_grad
-- needs: stacks or Optimizer.zero_grad annotations
-- torch: GradNotSetToNonePattern
-- requires: host_events, trace_files
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the zero_grad frame, or the Optimizer.zero_grad annotation
-- name         VARCHAR  its name
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   the duration of its aten::zero_ calls, ns
-- detail       VARCHAR  e.g. '4 x aten::zero_'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   the annotation when it is a cpu_op (traces of 2021), else NULL
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import annotations, has_stacks with context %}
{% from "templates/intervals.sql" import enclosing %}
WITH calls AS (  -- the zero_grad frames; without stacks, the annotations
    SELECT trace_id, event_id, name, pid, tid, ts_ns, dur_ns, end_ns, depth, NULL::BIGINT AS op_event_id
    FROM host_events h
    WHERE ends_with(name, ': zero_grad') {{ run_scope('h.') }}
    UNION ALL
    SELECT a.trace_id, a.event_id, a.name, a.pid, a.tid, a.ts_ns, a.dur_ns, a.end_ns, a.depth,
           CASE WHEN a.is_op THEN a.event_id END
    FROM ({{ annotations(['Optimizer.zero_grad#%.zero_grad']) | indent(10) }}) a
    JOIN trace_files f ON f.trace_id = a.trace_id
    WHERE NOT {{ has_stacks('f') }}
),
zeroes AS (  -- aten::zero_ not called by aten::zeros
    SELECT z.trace_id, z.pid, z.tid, z.event_id AS point_id, z.ts_ns, z.end_ns, z.dur_ns
    FROM host_events z
    LEFT JOIN host_events p ON p.trace_id = z.trace_id AND p.event_id = z.parent_event_id
    WHERE z.name = 'aten::zero_' AND p.name IS DISTINCT FROM 'aten::zeros' {{ run_scope('z.') }}
),
spans AS (
    SELECT trace_id, pid, tid, event_id AS span_id, depth, ts_ns, end_ns FROM calls
),
matched AS (  -- the zero_ calls under each zero_grad
    SELECT e.trace_id, e.span_id AS event_id, count(*) AS zeroes, sum(z.dur_ns) AS zero_ns
    FROM ({{ enclosing('zeroes', 'spans', ['trace_id', 'pid', 'tid']) | indent(10) }}) e
    JOIN zeroes z ON z.trace_id = e.trace_id AND z.point_id = e.point_id
    GROUP BY e.trace_id, e.span_id
)
SELECT c.trace_id, c.event_id, c.name, c.ts_ns, c.dur_ns, m.zero_ns::BIGINT AS at_stake_ns,
       m.zeroes || ' x aten::zero_' AS detail, c.pid, c.tid, c.ts_ns AS host_ts_ns, c.op_event_id
FROM calls c
JOIN matched m USING (trace_id, event_id)

-- @skipped
SELECT f.trace_id, 'no Python stacks (record with with_stack=True) and no Optimizer.zero_grad annotation' AS reason
FROM trace_files f
WHERE NOT {{ has_stacks('f') }}
  AND NOT EXISTS (SELECT 1 FROM ({{ annotations(['Optimizer.zero_grad#%']) }}) a WHERE a.trace_id = f.trace_id)
  {{ run_scope('f.') }}
