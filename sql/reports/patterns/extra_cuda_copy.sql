-- extra-cuda-copy: a tensor filled on the host, then copied (to the GPU): e.g.
-- torch.zeros(n).to("cuda") instead of torch.zeros(n, device="cuda").
--
-- Why it matters: the fill runs on the host, then the data crosses PCIe (and
-- the copy from pageable memory blocks the host); created on the device, the
-- tensor is one fill kernel.
-- How to fix: create the tensor on its device: torch.zeros(..., device="cuda")
-- (also ones, full, rand, randn, empty + fill_).
-- The trace must contain: CPU operators with their input types
-- (record_shapes=True). Python stacks (with_stack=True) make it torch's rule
-- exactly.
--
-- Matching is torch's ExtraCUDACopyPattern: an aten::to whose last child is
-- aten::_to_copy, whose last child is an aten::copy_ between two tensors of
-- one dtype; then, going down from the event just before the aten::to's
-- parent (its previous sibling) through last children, an aten::fill_,
-- aten::zero_, aten::normal_ or aten::uniform_ (one below that event, or that
-- event itself when it has no children). With stacks the parent is the Python
-- call `<built-in method to ...>` and its previous sibling the call that made
-- the tensor. Like torch it does not check that the copy goes to a GPU (a
-- same-dtype aten::to(copy=True) on the host matches too).
-- Difference from torch: torch skips traces without Python stacks; without
-- them this rule starts from the aten::to itself instead of its parent (the
-- op that made the tensor is then its previous sibling).
-- Time at stake: the aten::to's duration (the copy, which creating the
-- tensor on its device saves; the host-side fill is not counted).
--
-- severity: low
-- fix: create the tensor on its device: torch.zeros(..., device="cuda") instead of torch.zeros(...).to("cuda")
-- method: the aten::to's duration (the copy)
-- needs: shapes
-- torch: ExtraCUDACopyPattern
-- requires: host_events, trace_files, cpu_ops
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the aten::to
-- name         VARCHAR  'aten::to'
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   = dur_ns
-- detail       VARCHAR  the fill, e.g. 'aten::zero_ then aten::to (float)'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   = event_id
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import list_key, has_stacks, skipped_unless with context %}
{%- set init_ops = "('aten::fill_', 'aten::zero_', 'aten::normal_', 'aten::uniform_')" %}
WITH tos AS (
    SELECT * FROM host_events h WHERE name = 'aten::to' {{ run_scope('h.') }}
),
kids AS (  -- the last child of each aten::to
    SELECT c.trace_id, c.parent_event_id, arg_max(c.event_id, (c.ts_ns, c.event_id)) AS last_id
    FROM host_events c
    SEMI JOIN tos o ON o.trace_id = c.trace_id AND o.event_id = c.parent_event_id
    GROUP BY c.trace_id, c.parent_event_id
),
to_copies AS (  -- ... an aten::_to_copy
    SELECT o.*, c.event_id AS to_copy_id
    FROM tos o
    JOIN kids k ON k.trace_id = o.trace_id AND k.parent_event_id = o.event_id
    JOIN host_events c ON c.trace_id = o.trace_id AND c.event_id = k.last_id
    WHERE c.name = 'aten::_to_copy'
),
grandkids AS (  -- the last child of that
    SELECT c.trace_id, c.parent_event_id, arg_max(c.event_id, (c.ts_ns, c.event_id)) AS last_id
    FROM host_events c
    SEMI JOIN to_copies o ON o.trace_id = c.trace_id AND o.to_copy_id = c.parent_event_id
    GROUP BY c.trace_id, c.parent_event_id
),
copies AS (  -- ... an aten::copy_ between two tensors of one dtype
    SELECT o.*, c.input_types->>0 AS dtype
    FROM to_copies o
    JOIN grandkids g ON g.trace_id = o.trace_id AND g.parent_event_id = o.to_copy_id
    JOIN host_events c ON c.trace_id = o.trace_id AND c.event_id = g.last_id
    WHERE c.name = 'aten::copy_' AND c.input_types->>0 <> '' AND c.input_types->>0 = c.input_types->>1
),
stacks AS (
    SELECT f.trace_id, {{ has_stacks('f') }} AS stacks FROM trace_files f WHERE TRUE {{ run_scope('f.') }}
),
anchors AS (  -- torch starts from the aten::to's parent; without stacks, from the aten::to
    SELECT c.*, a.event_id AS anchor_id, {{ list_key('a') }} AS anchor_list
    FROM (SELECT c.*, CASE WHEN s.stacks THEN c.parent_event_id ELSE c.event_id END AS start_id
          FROM copies c JOIN stacks s USING (trace_id)) c
    JOIN host_events a ON a.trace_id = c.trace_id AND a.event_id = c.start_id
),
ordered AS (  -- the anchors' sibling lists, in order
    SELECT t.trace_id, t.event_id, t.name, t.pid, t.tid, t.ts_ns, t.end_ns, t.depth,
           lag(t.event_id) OVER (PARTITION BY t.trace_id, {{ list_key('t') }} ORDER BY t.ts_ns, t.event_id) AS prev_id
    FROM host_events t
    SEMI JOIN anchors a ON a.trace_id = t.trace_id AND a.anchor_list = {{ list_key('t') }}
),
prevs AS (  -- the sibling just before each anchor
    SELECT a.*, p.event_id AS prev_id, p.name AS prev_name, p.pid AS ppid, p.tid AS ptid,
           p.ts_ns AS prev_ts, p.end_ns AS prev_end, p.depth AS prev_depth
    FROM anchors a
    JOIN ordered o ON o.trace_id = a.trace_id AND o.event_id = a.anchor_id
    JOIN ordered p ON p.trace_id = a.trace_id AND p.event_id = o.prev_id
),
walk AS (  -- down from the previous sibling through last children (torch's while loop)
    WITH RECURSIVE w(trace_id, event_id, node_id, node_name, step) AS (
        SELECT trace_id, event_id, prev_id, prev_name, 0 FROM prevs
        UNION ALL
        SELECT w.trace_id, w.event_id, arg_max(c.event_id, (c.ts_ns, c.event_id)),
               arg_max(c.name, (c.ts_ns, c.event_id)), any_value(w.step) + 1
        FROM w JOIN host_events c ON c.trace_id = w.trace_id AND c.parent_event_id = w.node_id
        WHERE w.step = 0 OR w.node_name NOT IN {{ init_ops }}  -- torch stops at the first init op below
        GROUP BY w.trace_id, w.event_id
    )
    SELECT * FROM w
),
walked AS (  -- the first init op below the sibling
    SELECT trace_id, event_id, max(step) AS steps,
           arg_min(node_name, step) FILTER (WHERE node_name IN {{ init_ops }} AND step > 0) AS init_op
    FROM walk GROUP BY trace_id, event_id
)
SELECT p.trace_id, p.event_id, p.name, p.ts_ns, p.dur_ns, p.dur_ns AS at_stake_ns,
       coalesce(w.init_op, p.prev_name) || ' then aten::to (' || p.dtype || ')' AS detail,
       p.pid, p.tid, p.ts_ns AS host_ts_ns, p.event_id AS op_event_id
FROM prevs p
JOIN walked w USING (trace_id, event_id)
WHERE w.init_op IS NOT NULL OR (w.steps = 0 AND p.prev_name IN {{ init_ops }})  -- a leaf sibling counts itself

-- @skipped
{{ skipped_unless(['shapes']) }}
