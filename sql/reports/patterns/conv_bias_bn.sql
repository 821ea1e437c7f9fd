-- conv-bias-bn: a Conv2d with a bias, directly followed by a BatchNorm2d, which
-- subtracts the mean and so cancels the bias.
--
-- Why it matters: the bias costs an add (a kernel, or a fused epilogue) and a
-- parameter with its gradient and optimizer state, for nothing.
-- How to fix: nn.Conv2d(..., bias=False) before a BatchNorm2d.
-- The trace must contain: CPU operators with their input types
-- (record_shapes=True). Python stacks with module frames (with_stack=True)
-- make it torch's rule exactly.
--
-- Matching is torch's Conv2dBiasFollowedByBatchNorm2dPattern: an aten::conv2d
-- whose third input (the bias) has a type; from it, up to the nearest
-- enclosing 'nn.Module: Conv2d...' frame (or, when there is none, its thread's
-- top-level event, as torch's go_up_until does); the sibling right after that
-- event is an 'nn.Module: BatchNorm2d...' frame. Difference from torch: in a
-- trace with no nn.Module frames (no stacks) the conv's next sibling must be
-- aten::batch_norm instead (or aten::add_ then aten::batch_norm: in training
-- BatchNorm2d counts its batches with an add_ first).
-- Time at stake: not estimated (the bias add is often fused into the
-- convolution).
--
-- severity: low
-- fix: nn.Conv2d(..., bias=False) when a BatchNorm2d follows
-- method: not estimated
-- needs: shapes
-- torch: Conv2dBiasFollowedByBatchNorm2dPattern
-- requires: host_events, trace_files, cpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the aten::conv2d
-- name         VARCHAR  'aten::conv2d'
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   NULL (not estimated)
-- detail       VARCHAR  the two modules, e.g. 'nn.Module: Conv2d_0 -> nn.Module: BatchNorm2d_0'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   = event_id
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import list_key, skipped_unless with context %}
{% from "templates/intervals.sql" import enclosing %}
WITH modules AS (  -- traces with module frames
    SELECT DISTINCT trace_id FROM host_events h
    WHERE h.cat = 'python_function' AND starts_with(h.name, 'nn.Module: ') {{ run_scope('h.') }}
),
convs AS (  -- conv2d with a bias
    SELECT h.trace_id, h.event_id, h.name, h.pid, h.tid, h.ts_ns, h.dur_ns, h.end_ns, h.depth,
           m.trace_id IS NOT NULL AS by_module
    FROM host_events h
    LEFT JOIN modules m ON m.trace_id = h.trace_id
    WHERE h.cat = 'cpu_op' AND h.name = 'aten::conv2d' AND coalesce(h.input_types->>2, '') <> ''
      {{ run_scope('h.') }}
),
points AS (
    SELECT trace_id, pid, tid, event_id AS point_id, ts_ns, end_ns FROM convs WHERE by_module
),
conv_frames AS (
    SELECT trace_id, pid, tid, event_id AS span_id, depth, ts_ns, end_ns
    FROM host_events h
    WHERE h.cat = 'python_function' AND starts_with(h.name, 'nn.Module: Conv2d') {{ run_scope('h.') }}
),
top_level AS (
    SELECT trace_id, pid, tid, event_id AS span_id, depth, ts_ns, end_ns
    FROM host_events h
    WHERE h.parent_event_id IS NULL {{ run_scope('h.') }}
),
conv_modules AS (  -- the innermost Conv2d module frame around the conv
    SELECT trace_id, point_id AS event_id, arg_max(span_id, span_depth) AS up_id
    FROM ({{ enclosing('points', 'conv_frames', ['trace_id', 'pid', 'tid']) | indent(10) }})
    GROUP BY ALL
),
roots AS (  -- else its thread's top-level event around it
    SELECT trace_id, point_id AS event_id, any_value(span_id) AS up_id
    FROM ({{ enclosing('points', 'top_level', ['trace_id', 'pid', 'tid']) | indent(10) }})
    GROUP BY ALL
),
ups AS (  -- where torch looks for the next sibling (the conv itself without module frames)
    SELECT c.*, u.event_id AS up_id, u.name AS up_name, {{ list_key('u') }} AS up_list
    FROM convs c
    LEFT JOIN conv_modules m USING (trace_id, event_id)
    LEFT JOIN roots r USING (trace_id, event_id)
    JOIN host_events u ON u.trace_id = c.trace_id
                      AND u.event_id = CASE WHEN c.by_module THEN coalesce(m.up_id, r.up_id) ELSE c.event_id END
),
ordered AS (  -- their sibling lists, in order
    SELECT t.trace_id, t.event_id, lead(t.name) OVER w AS next_name, lead(t.name, 2) OVER w AS after_next
    FROM host_events t
    SEMI JOIN ups u ON u.trace_id = t.trace_id AND u.up_list = {{ list_key('t') }}
    WINDOW w AS (PARTITION BY t.trace_id, {{ list_key('t') }} ORDER BY t.ts_ns, t.event_id)
)
SELECT u.trace_id, u.event_id, u.name, u.ts_ns, u.dur_ns, NULL::BIGINT AS at_stake_ns,
       CASE WHEN u.by_module THEN u.up_name || ' -> ' || o.next_name
            ELSE 'aten::conv2d -> aten::batch_norm' END AS detail,
       u.pid, u.tid, u.ts_ns AS host_ts_ns, u.event_id AS op_event_id
FROM ups u
JOIN ordered o ON o.trace_id = u.trace_id AND o.event_id = u.up_id
WHERE CASE WHEN u.by_module THEN starts_with(o.next_name, 'nn.Module: BatchNorm2d')
           ELSE o.next_name = 'aten::batch_norm'
                OR (o.next_name = 'aten::add_' AND o.after_next = 'aten::batch_norm') END

-- @skipped
{{ skipped_unless(['shapes']) }}
