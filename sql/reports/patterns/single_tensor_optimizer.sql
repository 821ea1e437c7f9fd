-- single-tensor-optimizer: SGD, Adam or AdamW running their single-tensor
-- implementation (a Python loop over the parameters).
--
-- Why it matters: the loop runs a few small operators (and kernels) per
-- parameter; the foreach implementation does each step for all parameters in
-- a handful of multi-tensor kernels, the fused one in one.
-- How to fix: pass foreach=True (or fused=True on CUDA) to the optimizer.
-- The trace must contain: Python stacks (with_stack=True), or else the
-- Optimizer.step#<name>.step annotations torch records around every step.
--
-- Matching is torch's OptimizerSingleTensorPattern with stacks: any event
-- whose name ends with _single_tensor_adam, _single_tensor_sgd or
-- _single_tensor_adamw (torch/optim's Python functions). Traces without Python
-- stacks (where torch finds nothing): an Optimizer.step#SGD.step,
-- #Adam.step or #AdamW.step annotation with operators under it and none of
-- them a multi-tensor or fused one (aten::_foreach_*, aten::_fused_*) but
-- those of Lightning's hooks inside it (clip_grad_norm_'s aten::_foreach_norm in
-- configure_gradient_clipping is not the optimizer's).
-- Time at stake: the duration of the single-tensor step (an upper bound of
-- what foreach saves); of an annotation, less the closure's work inside it: an
-- optimizer step with a closure (Lightning's automatic optimization, LBFGS)
-- runs the model's forward and backward in it, so the parts of it under
-- Lightning's [pl][profile]* ranges and backward ranges (autograd::engine::
-- evaluate_function: *, *Backward*, any thread) are not the optimizer's.
--
-- severity: medium
-- fix: pass foreach=True (or fused=True on CUDA) to the optimizer
-- method: the duration of the single-tensor optimizer steps (upper bound)
-- needs: stacks or Optimizer.step annotations
-- torch: OptimizerSingleTensorPattern
-- requires: host_events, trace_files
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the _single_tensor_* frame, or the Optimizer.step annotation
-- name         VARCHAR  its name
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   dur_ns, of an annotation less its closure's work
-- detail       VARCHAR  the implementation, e.g. '_single_tensor_adam'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   the annotation when it is a cpu_op (traces of 2021), else NULL
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import annotations, has_stacks with context %}
{% from "templates/intervals.sql" import enclosing, covered_lengths %}
WITH by_stack AS (
    SELECT trace_id, event_id, name, ts_ns, dur_ns,
           regexp_extract(name, '(_single_tensor_[a-z]+)$', 1) AS detail, pid, tid, NULL::BIGINT AS op_event_id
    FROM host_events h
    WHERE (ends_with(name, '_single_tensor_adam') OR ends_with(name, '_single_tensor_sgd')
           OR ends_with(name, '_single_tensor_adamw')) {{ run_scope('h.') }}
),
opt_steps AS (  -- traces without stacks: the optimizer steps
    SELECT a.* FROM ({{ annotations(['Optimizer.step#SGD.step', 'Optimizer.step#Adam.step',
                                     'Optimizer.step#AdamW.step']) | indent(4) }}) a
    JOIN trace_files f ON f.trace_id = a.trace_id
    WHERE NOT {{ has_stacks('f') }}
),
closure_ranges AS (  -- a closure's work inside an optimizer step: Lightning's ranges, backward, in its time
    SELECT h.trace_id, h.pid, h.tid, h.event_id, h.ts_ns, h.end_ns, starts_with(h.name, '[pl][profile]') AS lightning
    FROM host_events h
    SEMI JOIN opt_steps o ON o.trace_id = h.trace_id AND o.ts_ns <= h.ts_ns AND h.end_ns <= o.end_ns
                         AND o.event_id <> h.event_id
    WHERE starts_with(h.name, '[pl][profile]') OR starts_with(h.name, 'autograd::engine::evaluate_function:')
          OR h.name LIKE '%Backward%'
),
multi_ops AS (
    SELECT h.trace_id, h.pid, h.tid, h.event_id AS point_id, h.ts_ns, h.end_ns
    FROM host_events h
    WHERE (starts_with(h.name, 'aten::_foreach_') OR starts_with(h.name, 'aten::_fused_')) {{ run_scope('h.') }}
      AND NOT EXISTS (SELECT 1 FROM closure_ranges c
                      WHERE c.lightning AND c.trace_id = h.trace_id AND c.pid = h.pid AND c.tid = h.tid
                        AND c.ts_ns <= h.ts_ns AND h.end_ns <= c.end_ns)
),
step_spans AS (
    SELECT trace_id, pid, tid, event_id AS span_id, depth, ts_ns, end_ns FROM opt_steps
),
multi AS (  -- the steps with a multi-tensor or fused op under them
    SELECT DISTINCT trace_id, span_id AS event_id
    FROM ({{ enclosing('multi_ops', 'step_spans', ['trace_id', 'pid', 'tid']) | indent(10) }})
),
closure AS (  -- per step, how much of it the closure's ranges cover
    {{ covered_lengths('step_spans', '(SELECT trace_id, ts_ns, end_ns, 1 AS class FROM closure_ranges)',
                       ['trace_id'], sets={'closure_ns': [1]}) | indent(4) }}
),
children AS (  -- the events directly under each step
    SELECT c.trace_id, c.parent_event_id AS event_id, count(*) AS n
    FROM host_events c SEMI JOIN opt_steps s ON s.trace_id = c.trace_id AND s.event_id = c.parent_event_id
    GROUP BY ALL
)
SELECT trace_id, event_id, name, ts_ns, dur_ns, dur_ns AS at_stake_ns, detail, pid, tid,
       ts_ns AS host_ts_ns, op_event_id
FROM by_stack
UNION ALL
SELECT s.trace_id, s.event_id, s.name, s.ts_ns, s.dur_ns, s.dur_ns - coalesce(c.closure_ns, 0),
       'no _foreach_ or _fused_ op under it', s.pid, s.tid, s.ts_ns, CASE WHEN s.is_op THEN s.event_id END
FROM (SELECT * FROM opt_steps SEMI JOIN children USING (trace_id, event_id)
      ANTI JOIN multi USING (trace_id, event_id)) s
LEFT JOIN closure c ON c.trace_id = s.trace_id AND c.span_id = s.event_id

-- @skipped
SELECT f.trace_id, 'no Python stacks (record with with_stack=True) and no Optimizer.step#SGD/Adam/AdamW.step annotation' AS reason
FROM trace_files f
WHERE NOT {{ has_stacks('f') }}
  AND NOT EXISTS (SELECT 1 FROM ({{ annotations(['Optimizer.step#%']) }}) a WHERE a.trace_id = f.trace_id)
  {{ run_scope('f.') }}
