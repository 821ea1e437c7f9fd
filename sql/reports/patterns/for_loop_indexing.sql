-- for-loop-indexing: a tensor indexed one element at a time in a Python loop:
-- aten::select and the same ops after it, repeated 10 times or more.
--
-- Why it matters: every iteration dispatches a few operators (and on a GPU
-- launches a kernel or more) to touch one row; one vectorised operation does
-- all rows at once.
-- How to fix: index with a tensor of indices, a slice or a mask (t[idx] = v,
-- t[:n] = x, torch.where) instead of a Python loop.
-- The trace must contain: CPU operators; nothing else.
--
-- Matching is torch's ForLoopIndexingPattern, reproduced on the trace's tree
-- (host_events: with Python stacks it is torch's tree): in a
-- list of siblings (the children of one event in time order, or the top level
-- of a thread), each aten::select opens a window that runs to the next
-- aten::select (or the end of the list). The windows after it repeat it when
-- each holds the same names in the same order and starts where the one before
-- it ends; a select whose window is repeated --loop-min-repeats times in all
-- (itself included) is a match. A select inside a run (repeated, or tried and
-- too short) opens no run of its own: torch's `visited` set, walked in one pass
-- here. (A run is cut where the distance between two selects changes, as
-- torch's fixed-length windows are; runs that alternate two distances then
-- start at every other select, as torch's do.)
-- Time at stake: the loop's time, from the first select's start to the end of
-- the last op of its last window, less one iteration (what one vectorised op
-- is assumed to cost): span * (repeats - 1) / repeats.
--
-- severity: low
-- fix: vectorise: index with a tensor of indices, a slice or a mask instead of a Python loop
-- method: the loop's span (first select to the end of the last iteration) less one iteration
-- needs: CPU operators
-- torch: ForLoopIndexingPattern
-- option: --loop-min-repeats INTEGER >= 2 = 10  for-loop-indexing: iterations that make a loop (torch: 10)
-- requires: host_events, trace_files
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the first aten::select of the loop
-- name         VARCHAR  'aten::select'
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   the loop's span less one iteration, ns
-- detail       VARCHAR  'N iterations of aten::select, ...' (the ops of one iteration)
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   = event_id
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/patterns.sql" import list_key with context %}
WITH lists AS (  -- the sibling lists that hold an aten::select
    SELECT DISTINCT trace_id, {{ list_key('h') }} AS list_key
    FROM host_events h WHERE name = 'aten::select' {{ run_scope('h.') }}
),
sib AS (  -- their events, numbered in time order
    SELECT t.trace_id, {{ list_key('t') }} AS list_key, t.event_id, t.name, t.pid, t.tid, t.ts_ns, t.dur_ns,
           t.end_ns,
           row_number() OVER (PARTITION BY t.trace_id, {{ list_key('t') }} ORDER BY t.ts_ns, t.event_id) AS pos
    FROM host_events t SEMI JOIN lists l ON l.trace_id = t.trace_id AND l.list_key = {{ list_key('t') }}
),
owned AS (  -- each event with the select whose window holds it: the last one at or before it
    SELECT trace_id, list_key, name, pos,
           max(CASE WHEN name = 'aten::select' THEN pos END)
               OVER (PARTITION BY trace_id, list_key ORDER BY pos ROWS UNBOUNDED PRECEDING) AS owner
    FROM sib
),
windows AS (  -- a select's window: the names from it to the next select (or the list's end)
    SELECT trace_id, list_key, owner AS pos, list(name ORDER BY pos) AS names
    FROM owned WHERE owner IS NOT NULL
    GROUP BY trace_id, list_key, owner
),
sel AS (
    SELECT s.trace_id, s.list_key, s.event_id, s.name, s.pid, s.tid, s.ts_ns, s.dur_ns, s.pos, w.names,
           row_number() OVER w AS idx,
           s.pos - lag(s.pos) OVER w AS gap,
           lag(w.names) OVER w AS prev_names
    FROM sib s JOIN windows w USING (trace_id, list_key, pos)
    WINDOW w AS (PARTITION BY s.trace_id, s.list_key ORDER BY s.pos)
),
repeats AS (  -- e: this window repeats the one before it (same names, starting where it ends)
    SELECT *, coalesce(len(names) >= gap AND names[1:gap] = prev_names, false) AS e,
              coalesce(gap = lag(gap) OVER w, false) AS same_gap
    FROM sel
    WINDOW w AS (PARTITION BY trace_id, list_key ORDER BY pos)
),
segments AS (  -- a segment: a select that repeats nothing, and the repeating ones after it
    SELECT *, sum((NOT e)::INTEGER) OVER w AS seg,
              e AND (same_gap OR NOT coalesce(lag(e) OVER w, false)) AS reset
    FROM repeats
    WINDOW w AS (PARTITION BY trace_id, list_key ORDER BY pos ROWS UNBOUNDED PRECEDING)
),
continues AS (
    -- c: the window continues the run in progress. Torch's run keeps the
    -- length of its first window: a repeat at another distance ends the run, so
    -- the next one continues again; after a reset (a repeat at the same
    -- distance, or the segment's first) c alternates until the next reset.
    SELECT *, e AND (idx - max(CASE WHEN reset THEN idx END)
                               OVER (PARTITION BY trace_id, list_key, seg ORDER BY pos
                                     ROWS UNBOUNDED PRECEDING)) % 2 = 0 AS c
    FROM segments
),
runs AS (
    SELECT *, sum((NOT c)::INTEGER) OVER (PARTITION BY trace_id, list_key ORDER BY pos
                                          ROWS UNBOUNDED PRECEDING) AS run
    FROM continues
),
loops AS (  -- each run: its first select, its length and its last select
    SELECT trace_id, list_key, run,
           arg_min(event_id, pos) AS event_id, min(pos) AS first_pos, max(pos) AS last_pos, count(*) AS repeats,
           arg_min(names, pos) AS names, arg_min(name, pos) AS name, arg_min(pid, pos) AS pid,
           arg_min(tid, pos) AS tid, min(ts_ns) AS ts_ns, arg_min(dur_ns, pos) AS dur_ns
    FROM runs
    GROUP BY trace_id, list_key, run
    HAVING count(*) >= $loop_min_repeats
),
spans AS (  -- the end of the last op of the last iteration
    SELECT l.trace_id, l.event_id, max(s.end_ns) AS end_ns
    FROM loops l
    JOIN sib s ON s.trace_id = l.trace_id AND s.list_key = l.list_key
              AND s.pos BETWEEN l.first_pos AND l.last_pos + len(l.names) - 1
    GROUP BY l.trace_id, l.event_id
)
SELECT l.trace_id, l.event_id, l.name, l.ts_ns, l.dur_ns,
       ((sp.end_ns - l.ts_ns) * (l.repeats - 1) // l.repeats)::BIGINT AS at_stake_ns,
       l.repeats || ' iterations of ' || array_to_string(l.names, ', ') AS detail,
       l.pid, l.tid, l.ts_ns AS host_ts_ns, l.event_id AS op_event_id
FROM loops l
JOIN spans sp USING (trace_id, event_id)
