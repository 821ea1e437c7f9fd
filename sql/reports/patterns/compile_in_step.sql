-- compile-in-step: torch.compile compiling inside the profiled steps (TorchDynamo
-- tracing a frame, AOTAutograd, Inductor's code generation and autotuning): a
-- recompile (a guard failed: a new shape, a changed Python value) or a first
-- compile that the warm-up before the profiled steps did not cover.
--
-- Why it matters: a compile holds the host for tens of milliseconds to minutes
-- while nothing else runs; the step that pays for it is no steady-state step,
-- and its time counts as the time of the call that triggered it (the
-- forward). A recompile comes back whenever a guard fails again, until the
-- frame reaches the recompile limit and runs eagerly.
-- How to fix: see why with TORCH_LOGS=recompiles (and guards); mark the sizes
-- that change dynamic (torch._dynamo.mark_dynamic(x, dim), or
-- torch.compile(dynamic=True)); keep the Python values the guards check
-- (ints, floats, flags, lengths) constant, or pass them as tensors; warm up
-- with every shape before the profiled steps (the schedule's warmup).
-- The trace must contain: the compile's own ranges, which torch records while
-- the profiler runs: '<key> (dynamo_timed)' (torch's dynamo_timed, torch 2.x)
-- and, in recent torch (2.13 does), its phases ('dynamo',
-- 'entire_frame_compile', 'backend_compile', ...), each with an annotation
-- '<phase>_data: ..., compile_id=F/N' inside it.
-- ProfilerStep#N annotations limit it to the steps; without them the whole
-- trace counts.
--
-- Matching: the outermost such range on its thread (they nest: dynamo >
-- entire_frame_compile > _compile.compile_inner (dynamo_timed) > ...) is one
-- compile; it matches when it starts inside a step. Its compile id F/N (torch's
-- CompileId: frame F, compiled for the N-th time; 0 is the first compile, N > 0
-- the N-th recompile) is that of the first compile_id= annotation inside it,
-- else (older torch) that of the first 'Torch-Compiled Region: F/N' on its
-- thread after its start and in its step: the compiled code it made, running.
-- The ranges of torch.compile's compiled code running (Torch-Compiled Region,
-- TorchDynamo Cache Lookup, CompiledFunction) are not compiling and match
-- nothing.
-- Time at stake: the compile's duration.
--
-- severity: medium
-- fix: TORCH_LOGS=recompiles says why; torch._dynamo.mark_dynamic (or dynamic=True) for changing sizes, no guards on changing Python values, warm up every shape first
-- method: the duration of the outermost compile range
-- needs: compile ranges (any trace recorded while torch.compile compiles)
-- requires: host_events, steps, trace_files
--
-- Columns:
-- trace_id     INTEGER  trace
-- event_id     BIGINT   the outermost compile range
-- name         VARCHAR  its name, e.g. 'dynamo' or '_compile.compile_inner (dynamo_timed)'
-- ts_ns        BIGINT   its start, ns since the epoch
-- dur_ns       BIGINT   its duration, ns
-- at_stake_ns  BIGINT   = dur_ns
-- detail       VARCHAR  e.g. 'step 2: recompile 1 of frame 0 (compile id 0/1)'
-- pid          BIGINT   process
-- tid          BIGINT   thread
-- host_ts_ns   BIGINT   = ts_ns
-- op_event_id  BIGINT   the range when it is a cpu_op (it may carry a 'Call stack'), else NULL
{% from "templates/scope.sql" import run_scope with context %}
WITH ids AS (  -- the '<phase>_data: ..., compile_id=F/N' annotations (recent torch)
    SELECT trace_id, event_id, parent_event_id, name, pid, tid, ts_ns,
           regexp_extract(name, 'compile_id=([^,\s]+)', 1) AS compile_id
    FROM host_events
    WHERE cat = 'user_annotation' AND name LIKE '%\_data: %compile\_id=%' ESCAPE '\' {{ run_scope() }}
),
ranges AS (  -- the compile's ranges: dynamo_timed, and the phases that hold their _data annotation
    SELECT trace_id, event_id, cat, name, pid, tid, ts_ns, dur_ns, end_ns, depth
    FROM host_events
    WHERE cat IN ('cpu_op', 'user_annotation') AND name LIKE '% (dynamo\_timed)' ESCAPE '\' {{ run_scope() }}
    UNION
    SELECT p.trace_id, p.event_id, p.cat, p.name, p.pid, p.tid, p.ts_ns, p.dur_ns, p.end_ns, p.depth
    FROM ids i
    JOIN host_events p ON p.trace_id = i.trace_id AND p.event_id = i.parent_event_id
    WHERE starts_with(i.name, p.name || '_data: ')
),
compiles AS (  -- the outermost range on its thread: one compile
    SELECT r.*
    FROM ranges r
    WHERE NOT EXISTS (SELECT 1 FROM ranges o
                      WHERE o.trace_id = r.trace_id AND o.pid = r.pid AND o.tid = r.tid AND o.depth < r.depth
                        AND o.ts_ns <= r.ts_ns AND o.end_ns >= r.end_ns)
),
stepped AS (  -- in a step, or anywhere in a trace without steps
    SELECT c.*, st.step, st.end_ns AS step_end_ns
    FROM compiles c
    ASOF LEFT JOIN steps st ON st.trace_id = c.trace_id AND c.ts_ns >= st.ts_ns
    WHERE c.ts_ns < st.end_ns
       OR NOT EXISTS (SELECT 1 FROM steps x WHERE x.trace_id = c.trace_id)
),
annotated AS (  -- the first compile id annotated inside each compile
    SELECT c.trace_id, c.event_id, arg_min(i.compile_id, (i.ts_ns, i.event_id)) AS compile_id
    FROM stepped c
    JOIN ids i ON i.trace_id = c.trace_id AND i.pid = c.pid AND i.tid = c.tid
              AND i.ts_ns >= c.ts_ns AND i.ts_ns < c.end_ns
    GROUP BY c.trace_id, c.event_id
),
regions AS (  -- the compiled code running
    SELECT trace_id, pid, tid, ts_ns, regexp_extract(name, 'Torch-Compiled Region: (\S+)', 1) AS compile_id
    FROM host_events
    WHERE cat IN ('cpu_op', 'user_annotation') AND name LIKE 'Torch-Compiled Region: %' {{ run_scope() }}
),
ran AS (  -- the first region after each compile's start on its thread, in its step
    SELECT c.trace_id, c.event_id, g.compile_id
    FROM stepped c
    ASOF JOIN regions g ON g.trace_id = c.trace_id AND g.pid = c.pid AND g.tid = c.tid AND g.ts_ns >= c.ts_ns
    WHERE c.step_end_ns IS NULL OR g.ts_ns < c.step_end_ns
),
identified AS (
    SELECT c.*, coalesce(a.compile_id, g.compile_id) AS compile_id,
           regexp_extract(coalesce(a.compile_id, g.compile_id), '^(\d+)/(\d+)$', ['frame', 'n']) AS fn
    FROM stepped c
    LEFT JOIN annotated a USING (trace_id, event_id)
    LEFT JOIN ran g USING (trace_id, event_id)
)
SELECT trace_id, event_id, name, ts_ns, dur_ns, dur_ns AS at_stake_ns,
       coalesce('step ' || step || ': ', '')
       || CASE WHEN compile_id IS NULL THEN 'a compile (no compile id in the trace)'
               WHEN fn.n = '0' THEN 'first compile of frame ' || fn.frame || ' (compile id ' || compile_id || ')'
               WHEN fn.n <> '' THEN 'recompile ' || fn.n || ' of frame ' || fn.frame
                                    || ' (compile id ' || compile_id || ')'
               ELSE 'compile id ' || compile_id END AS detail,
       pid, tid, ts_ns AS host_ts_ns, CASE WHEN cat = 'cpu_op' THEN event_id END AS op_event_id
FROM identified
