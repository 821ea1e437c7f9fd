-- ops: torch.autograd.profiler's key_averages().table() from a trace file:
-- per operator (and annotation, Python function, runtime call, kernel) its
-- calls, self and total CPU time, self and total device time, memory and FLOPs.
-- question: Which operators take the CPU and device time, as torch's key_averages() table shows it?
--
-- Rows follow torch's rules (torch/autograd/profiler.py _parse_kineto_results,
-- profiler_util.py EventList): every host event of the trace is a call, keyed by
-- its name: CPU operators, user annotations (record_function labels; a label
-- and an operator of the same name are two rows, as in torch), Python function
-- events (with_stack traces), runtime calls; ProfilerStep#N are all one row,
-- 'ProfilerStep*'. Device events (kernels, memcpys, memsets; device-side user
-- annotations) are rows with device time only. torch drops the names
-- [memory], profiler::_record_function_enter(_new) / _exit, aten::is_leaf,
-- aten::output_nr and aten::_version; so does this report, their time then
-- counts in their parent's self time. An event is a child of the innermost
-- event on its thread that contains it entirely (the nesting computed at
-- load, as torch's _populate_cpu_children); an event whose parent has the same
-- name and no other child is merged into it (torch's _remove_dup_nodes: its
-- call is not counted and its self time is its parent's). The annotations of
-- c10d's Work objects (gloo:*, nccl:*, ...) are async RecordFunctions, which
-- torch leaves out of the tree: calls and total CPU time and memory only; their
-- self time, the device time they launched and their children are their
-- parent's (Kineto gives those launches the parent's External id). So is a
-- record_function not ended on its thread while profiling (ended on another
-- thread, or still open at the stop: '"finished": false' in the trace, which
-- gives it the profiler's stop as end: its total is longer than torch's, a
-- note says so); the nesting computed at load leaves it out already
-- (events.unfinished: no one's parent, self time 0).
-- Self CPU time = duration - the durations of the children (torch's
-- definition: it is negative where children overlap each other on a thread,
-- e.g. ProfilerStep#N starting inside the Python frames it outlives; duckprof
-- keeps torch's value, and a note counts those calls). Percentages are of the
-- sum of all self CPU times, as torch's. Device time: the kernels, memcpys and
-- memsets an operator launched: those whose launch call (runtime, on
-- correlation) it encloses innermost, an operator or user annotation (torch
-- follows the launch's External id, which Kineto takes from the innermost
-- RecordFunction: the same event); Device total adds those of every event
-- starting inside it on its thread.
-- Memory (profile_memory traces): the bytes of the [memory] events (any
-- thread) from the call's start to its end, inclusive, CPU (and MKLDNN,
-- IDEEP) and device (CUDA, HIP, XPU, PrivateUse1) apart; self = that minus its
-- children's; [memory] events during no call at all are one more row,
-- '[memory]', as in torch. FLOPs: duckprof's estimate of each call (cpu_op_estimates; torch
-- counts only mm, addmm, bmm, baddbmm, conv2d, mul and add, and only at that
-- level: duckprof also at convolution, _convolution, ...); aten::add and aten::mul
-- as torch's profiler counts them (not flop_counter, which has none): the number
-- of elements of the first input, whatever the other's shape.
-- --group-by-input-shape: one row per name and Input Dims. --group-by-stack N:
-- one row per name and the first N frames of its Python stack (the Call stack
-- arg of verbose with_stack traces, else its enclosing Python function events;
-- entries torch filters out dropped; calls inside a backward function take the
-- stack of the forward operator with its sequence number, as torch does).
-- --top-level-only: only names whose first call has no parent in torch's tree
-- (async events are in none: a call inside only gloo:* annotations is top-level;
-- device rows always, as in torch).
-- Columns: torch's, but the call count comes right after the key (torch's
-- '# of Calls' is last), so a table narrowed to the terminal keeps it.
--
-- option: --sort/-s CHOICE(self_cpu,cpu_total,self_device,device_total,count,cpu_mem,self_cpu_mem,device_mem,self_device_mem,flops,name) = self_cpu  order of the rows (torch's sort_by)
-- option: --limit/-n INTEGER >= 0 = 30  rows per trace (0 = all)
-- option: --group-by-input-shape FLAG  one row per name and input shapes (record_shapes traces)
-- option: --group-by-stack INTEGER >= 0 = 0  one row per name and the first N frames of its Python stack
-- option: --top-level-only FLAG  only names whose first call is not inside another event
-- option: --tensor-cores FLAG  each row's Tensor Cores figures (TensorBoard's operator view: eligible, % of its device time)
-- option: --by-graph-node FLAG  per torch.compile FX graph node instead (sql/reports/ops_graph_nodes.sql)
-- example: duckprof report ops trace.json.gz --sort self_cpu --limit 30
-- requires: cpu_ops, user_annotations, python_functions, runtime, gpu_user_annotations, launches, memory_events, call_totals, cpu_op_estimates, trace_files
--
-- Columns:
-- run                    VARCHAR  run label
-- rank                   INTEGER  rank of the trace
-- trace_id               INTEGER  trace
-- name                   VARCHAR  the key: event name ('ProfilerStep*' for every ProfilerStep#N)
-- input_shapes           VARCHAR  Input Dims (only with --group-by-input-shape)
-- stack                  VARCHAR  the first N Python frames, innermost first, '; '-separated
--                                 (only with --group-by-stack)
-- kind                   VARCHAR  [wide]  'cpu_op', 'user_annotation', 'python_function', 'runtime',
--                                 'kernel', 'memcpy', 'memset', 'gpu_user_annotation', ... (of its first call)
-- count                  BIGINT   calls
-- self_cpu_pct           DOUBLE   self_cpu_us / the sum of all self CPU times, %
-- self_cpu_us            DOUBLE   self CPU time, µs
-- cpu_total_pct          DOUBLE   cpu_total_us / the sum of all self CPU times, %
-- cpu_total_us           DOUBLE   CPU time including children, µs
-- cpu_avg_us             DOUBLE  [wide]  cpu_total_us / count
-- self_device_us         DOUBLE   device time of what it launched itself (device rows: their duration), µs
-- self_device_pct        DOUBLE  [wide]  self_device_us / the sum over kernels, memcpys and memsets, %
-- device_total_us        DOUBLE   device time including what its children launched, µs
-- tc_eligible            BOOLEAN  TensorBoard's 'Tensor Cores eligible' (only with --tensor-cores): the
--                                 name is one of its operators (templates/categories.sql
--                                 tensor_core_op_names), or a call of it has such an operator inside it,
--                                 or launched (itself or inside it) a kernel using Tensor Cores
-- tc_self_pct            DOUBLE   of self_device_us, the kernels using Tensor Cores, %; NULL: no self
--                                 device time, where TensorBoard shows 0 (only with --tensor-cores)
-- tc_total_pct           DOUBLE   of device_total_us, the kernels using Tensor Cores, %; NULL: no device
--                                 time (only with --tensor-cores)
-- device_avg_us          DOUBLE  [wide]  device_total_us / count
-- flops                  BIGINT   FLOPs of its calls (sum over calls with an estimate; NULL: none)
-- cpu_mem_bytes          BIGINT  [wide]  CPU bytes allocated (net) during its calls (profile_memory)
-- self_cpu_mem_bytes     BIGINT   cpu_mem_bytes less its children's
-- device_mem_bytes       BIGINT  [wide]  device bytes allocated (net) during its calls
-- self_device_mem_bytes  BIGINT   device_mem_bytes less its children's
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/intervals.sql" import merged_intervals %}
{% from "templates/memory.sql" import memory_bytes, dropped_names %}
{% from "templates/launch_owner.sql" import external_owners %}
{% from "templates/categories.sql" import uses_tensor_cores, tensor_core_op_names, sql_list %}
{%- set dropped = dropped_names() %}
{#- the annotations of c10d's Work objects (ProcessGroupGloo's gloo:all_reduce, ProcessGroupNCCL's
    nccl:all_reduce, ...): their RecordFunction is async (c10d Work sets _setAsync: a work may end on
    another thread), and torch leaves async events out of the tree; so is a record_function not ended on
    its thread (torch: start and end threads differ), which the trace marks '"finished": false' and
    the nesting leaves out at load (events.unfinished) -#}
{%- set async_work = '^(gloo|nccl|mpi|ucc|xccl|hccl):' %}
{#- a call of one of TensorBoard's Tensor Cores operators (--tensor-cores: eligible) -#}
{%- macro tensor_core_op(p='') %}{{ p }}kind_no = 0 AND {{ p }}key IN {{ sql_list(tensor_core_op_names) }}{% endmacro %}
{%- set orders = {
    'self_cpu': 'self_cpu_us DESC', 'cpu_total': 'cpu_total_us DESC', 'self_device': 'self_device_us DESC',
    'device_total': 'device_total_us DESC', 'count': 'count DESC', 'cpu_mem': 'cpu_mem_bytes DESC',
    'self_cpu_mem': 'self_cpu_mem_bytes DESC', 'device_mem': 'device_mem_bytes DESC',
    'self_device_mem': 'self_device_mem_bytes DESC', 'flops': 'flops DESC NULLS LAST', 'name': 'name'} %}
{%- set order_by = orders[sort] ~ ', name' ~ (', input_shapes' if group_by_input_shape else '')
                   ~ (', stack' if group_by_stack else '') ~ ', kind' %}
WITH {% if group_by_stack %}RECURSIVE {% endif %}scope AS (
    SELECT trace_id, run, rank FROM trace_files WHERE TRUE {{ run_scope() }}
),
call_flops AS (  -- each call's FLOPs: duckprof's estimate; for aten::add and aten::mul torch's profiler's
                 -- (torch/csrc/profiler/util.cpp computeFlops: the product of the first input's dims,
                 -- 1 for a 0-dim tensor), which cpu_op_estimates leaves out (flop_counter's, none)
    SELECT trace_id, event_id, name, input_dims, flops
    FROM cpu_op_estimates
    WHERE TRUE {{ run_scope() }} AND name NOT IN ('aten::add', 'aten::mul')
    UNION ALL
    SELECT trace_id, event_id, name, input_dims,
           CASE WHEN json_type(input_dims, '$[0]') = 'ARRAY'
                THEN coalesce(list_product(try_cast(input_dims->'$[0]' AS BIGINT[])), 1)::BIGINT END
    FROM cpu_ops
    WHERE TRUE {{ run_scope() }} AND name IN ('aten::add', 'aten::mul') AND input_dims IS NOT NULL
),
ext_owner AS (
    {{ external_owners('launches', 'TRUE ' ~ run_scope()) | indent(4) }}
),
launched AS (  -- per correlation id, the device time of the kernels, memcpys and memsets
              -- (launches: one row per such gpu_ops event, stored at load)
    SELECT trace_id, correlation, sum(dur_ns)::BIGINT AS dev_ns
    FROM launches
    WHERE dur_ns IS NOT NULL {{ run_scope() }}
    GROUP BY trace_id, correlation
),
ann AS MATERIALIZED (  -- the user annotations, and which are async: c10d's Work annotations, and record_functions not
          -- ended on their thread while profiling (unfinished: ended on another thread, or still open at
          -- the stop; torch's start and end threads differ), which the nesting left out at load already
    SELECT trace_id, event_id, name, pid, tid, ts_ns, end_ns, self_ns, parent_event_id, depth,
           unfinished IS NOT NULL OR regexp_matches(name, '{{ async_work }}') AS async
    FROM user_annotations WHERE TRUE {{ run_scope() }}
),
ev AS (  -- every host event: a call (or a dropped one), with its call_totals (device time launched
         -- from within it on its thread, memory allocated during it) and, for runtime calls,
         -- the enclosing op and the device time launched
    SELECT e.trace_id, e.event_id, e.kind_no,{% if group_by_stack %} e.pid, e.tid,{% endif %} e.ts_ns, e.end_ns,
           e.self_ns, e.parent_event_id, e.depth, e.key, e.name IN {{ dropped }} AS dropped, e.op_event_id,
           e.kind_no = 3 OR e.self_ns = e.end_ns - e.ts_ns OR e.end_ns = e.ts_ns AS leaf,
           e.async,
           coalesce(t.device_ns, 0) AS device_ns, coalesce(t.cpu_mem_bytes, 0) AS cpu_mem,
           coalesce(t.device_mem_bytes, 0) AS dev_mem, g.dev_ns AS launched_ns
           {%- if group_by_input_shape %}, e.input_dims{% endif %}
           {%- if not group_by_stack %},
           hash(e.key, e.kind_no = 1{% if group_by_input_shape %}, e.input_dims{% endif %}) AS kh
           {%- endif %}
    FROM (SELECT *, CASE WHEN starts_with(name, 'ProfilerStep#') THEN 'ProfilerStep*' ELSE name END AS key
          FROM (SELECT trace_id, event_id, 0::UTINYINT AS kind_no, name, pid, tid, ts_ns, end_ns, self_ns, parent_event_id, depth,
                       NULL::BIGINT AS correlation, NULL::BIGINT AS op_event_id, unfinished IS NOT NULL AS async
                       {%- if group_by_input_shape %}, input_dims::VARCHAR AS input_dims{% endif %}
                FROM cpu_ops
                UNION ALL
                SELECT trace_id, event_id, 1, name, pid, tid, ts_ns, end_ns, self_ns, parent_event_id, depth,
                       NULL, NULL, async
                       {%- if group_by_input_shape %}, NULL{% endif %}
                FROM ann
                UNION ALL
                SELECT trace_id, event_id, 2, name, pid, tid, ts_ns, end_ns, self_ns, parent_event_id, depth,
                       NULL, NULL, false
                       {%- if group_by_input_shape %}, NULL{% endif %}
                FROM python_functions
                UNION ALL
                SELECT trace_id, event_id, 3, name, pid, tid, ts_ns, end_ns, self_ns, parent_event_id, depth,
                       correlation, op_event_id, false
                       {%- if group_by_input_shape %}, NULL{% endif %}
                FROM runtime)
          WHERE TRUE {{ run_scope() }} AND ts_ns IS NOT NULL AND end_ns IS NOT NULL) e
    -- (call_totals has only calls with some: the filter drops nothing, but with it DuckDB's
    -- estimate puts the hash table on this side, not on the events)
    LEFT JOIN (SELECT * FROM call_totals WHERE TRUE {{ run_scope() }} AND (device_ns <> 0 OR cpu_mem_bytes <> 0 OR device_mem_bytes <> 0)) t
           ON t.trace_id = e.trace_id AND t.event_id = e.event_id
    LEFT JOIN launched g ON g.trace_id = e.trace_id AND g.correlation = e.correlation
),
{%- if group_by_stack %}
op_args AS (  -- the cpu_ops that carry a sequence number or a Call stack, or are backward functions
              -- (torch's RecordScope BACKWARD_FUNCTION: the autograd nodes the engine runs; those with a
              -- forward thread), their args read in one pass (a string test first, then one JSON parse
              -- for the three keys; cpu_ops.sequence_number would parse them again)
    SELECT trace_id, event_id, pid, tid, ts_ns, end_ns, try_cast(a[1] AS BIGINT) AS seq, a[2] AS cs,
           NOT starts_with(name, 'autograd::engine::evaluate_function:')
           AND (starts_with(name, 'torch::autograd::') OR coalesce(try_cast(a[3] AS BIGINT), 0) > 0) AS backward,
           coalesce(try_cast(a[3] AS BIGINT), 0) AS fwd_thread
    FROM (SELECT *, json_extract_string(args, ['$."Sequence number"', '$."Call stack"', '$."Fwd thread id"']) AS a
          FROM cpu_ops
          WHERE TRUE {{ run_scope() }}
            AND (regexp_matches(args, '"(Sequence number|Fwd thread id|Call stack)"') OR starts_with(name, 'torch::autograd::')))
),
bw AS (  -- the backward functions
    SELECT trace_id, event_id, pid, tid, ts_ns, end_ns, seq, fwd_thread FROM op_args WHERE backward
),
frames AS (  -- every Python frame (with_stack), and the Call stack arg of those that have one
    SELECT trace_id, event_id, name, python_id, python_parent_id,
           CASE WHEN contains(args, '"Call stack"') THEN json_extract_string(args, '$."Call stack"') END AS cs
    FROM python_functions
    WHERE TRUE {{ run_scope() }}
),
annotation_args AS (  -- the Call stack arg of the user annotations, in traces whose operators carry one
                     -- (verbose with_stack: torch writes it on every RecordFunction, label or operator).
                     -- The args are read after a join with those traces, and the test is under a
                     -- GROUP BY (a filter would go down to the scan): without such traces the scan is
                     -- skipped (~0.25 CPU-s at 1 GB: the args column is read whole however few rows want it)
    SELECT u.trace_id, u.event_id,
           any_value(CASE WHEN contains(u.args, '"Call stack"') THEN json_extract_string(u.args, '$."Call stack"') END) AS cs
    FROM (SELECT DISTINCT trace_id FROM op_args WHERE cs IS NOT NULL) a
    JOIN user_annotations u ON u.trace_id = a.trace_id
    GROUP BY u.trace_id, u.event_id
),
arg_stacks AS (  -- the Call stack arg that verbose with_stack traces write
    SELECT trace_id, event_id, string_split(rtrim(cs, ';'), ';') AS frames
    FROM (SELECT trace_id, event_id, cs FROM op_args
          UNION ALL
          SELECT trace_id, event_id, cs FROM annotation_args
          UNION ALL
          SELECT trace_id, event_id, cs FROM frames)
    WHERE cs IS NOT NULL
),
py AS (  -- the Python frames of traces without a Call stack arg
    SELECT trace_id, event_id, name, python_id, python_parent_id FROM frames
    WHERE trace_id NOT IN (SELECT trace_id FROM arg_stacks)
),
py_stack AS (  -- each Python frame's stack, itself first: from the root frames down
    SELECT p.trace_id, p.event_id, p.python_id, [p.name] AS frames
    FROM py p
    ANTI JOIN py q ON q.trace_id = p.trace_id AND q.python_id = p.python_parent_id
    UNION ALL
    SELECT c.trace_id, c.event_id, c.python_id, list_prepend(c.name, s.frames)
    FROM py_stack s JOIN py c ON c.trace_id = s.trace_id AND c.python_parent_id = s.python_id
    WHERE len(s.frames) < 10000
),
{%- set kept = "list_filter(frames, lambda x: NOT ((contains(x, 'autograd/__init__') AND contains(x, '_make_grads'))
                                              OR (contains(x, 'autograd/__init__') AND contains(x, 'backward'))
                                              OR (contains(x, 'torch/tensor') AND contains(x, 'backward'))
                                              OR (contains(x, '_internal/common_utils') AND contains(x, 'prof_callable'))
                                              OR (contains(x, '_internal/common_utils') AND contains(x, 'prof_func_call'))
                                              OR (contains(x, '_internal/common_utils') AND contains(x, 'prof_meth_call'))))" %}
{#- a stack's row key: the first N of the frames torch's _filter_stack_entry keeps, '; '-separated #}
{%- set stack_key = "array_to_string(list_slice(" ~ kept ~ ", 1, $group_by_stack), '; ')" %}
frame_keys AS (  -- the stack key under each Python frame: the first N of the frames torch's
                 -- _filter_stack_entry keeps, '; '-separated, and its hash
    SELECT trace_id, event_id, python_id, stack, hash(stack) AS sh
    FROM (SELECT trace_id, event_id, python_id, {{ stack_key }} AS stack FROM py_stack)
),
below_py AS (  -- every other event under a Python frame, and its innermost one: from each frame
               -- down the stored nesting (parent_event_id), through the events that are not frames
    SELECT c.trace_id, c.event_id, c.parent_event_id AS py_event_id
    FROM ev c SEMI JOIN py p ON p.trace_id = c.trace_id AND p.event_id = c.parent_event_id
    WHERE c.kind_no <> 2
    UNION ALL
    SELECT c.trace_id, c.event_id, d.py_event_id
    FROM below_py d JOIN ev c ON c.trace_id = d.trace_id AND c.parent_event_id = d.event_id
    WHERE c.kind_no <> 2
),
arg_keys AS (  -- the stack key of each Call stack arg, as frame_keys'
    SELECT trace_id, event_id, stack, hash(stack) AS sh
    FROM (SELECT trace_id, event_id, {{ stack_key }} AS stack FROM arg_stacks)
),
own_stacks AS (  -- each event's own stack key (no row: none): its Call stack arg, else its innermost
                 -- Python frame's stack, and for a frame, its parent frame's
    SELECT trace_id, event_id, sh FROM arg_keys
    UNION ALL
    SELECT b.trace_id, b.event_id, k.sh
    FROM below_py b JOIN frame_keys k ON k.trace_id = b.trace_id AND k.event_id = b.py_event_id
    UNION ALL
    SELECT p.trace_id, p.event_id, k.sh
    FROM py p JOIN frame_keys k ON k.trace_id = p.trace_id AND k.python_id = p.python_parent_id
),
under_bw AS (  -- each event inside a backward function (or one itself), and that function
    SELECT e.trace_id, e.event_id, b.seq, b.fwd_thread
    FROM (SELECT * FROM ev e SEMI JOIN (SELECT DISTINCT trace_id, pid, tid FROM bw) t USING (trace_id, pid, tid)) e
    ASOF JOIN bw b ON b.trace_id = e.trace_id AND b.pid = e.pid AND b.tid = e.tid AND e.ts_ns >= b.ts_ns
    WHERE e.end_ns <= b.end_ns
),
fwd AS (  -- the stack of the first forward call of each sequence number
    SELECT c.trace_id, c.seq, arg_min(coalesce(o.sh, hash('')), (c.ts_ns, -c.end_ns)) AS sh
    FROM op_args c
    LEFT JOIN own_stacks o ON o.trace_id = c.trace_id AND o.event_id = c.event_id
    ANTI JOIN under_bw u ON u.trace_id = c.trace_id AND u.event_id = c.event_id
    WHERE c.seq >= 0
    GROUP BY c.trace_id, c.seq
),
call_stacks AS (  -- each event's stack key, where it is not '': inside a backward function, the
                  -- forward call's (none when the function has no forward thread), else its own
    SELECT u.trace_id, u.event_id, w.sh
    FROM under_bw u JOIN fwd w ON w.trace_id = u.trace_id AND w.seq = u.seq
    WHERE u.fwd_thread > 0
    UNION ALL
    SELECT o.trace_id, o.event_id, o.sh
    FROM own_stacks o
    ANTI JOIN under_bw u ON u.trace_id = o.trace_id AND u.event_id = o.event_id
),
stacks AS (  -- the stack text of each hash (the rows carry the hash; base takes the text at the end)
    SELECT sh, any_value(stack) AS stack
    FROM (SELECT sh, stack FROM arg_keys UNION ALL SELECT sh, stack FROM frame_keys UNION ALL SELECT hash(''), '')
    GROUP BY sh
),
keyed AS (  -- each event's row key: name, annotation or not, stack, hashed
    SELECT e.*, f.flops, coalesce(st.sh, hash('')) AS sh,
           hash(e.key, e.kind_no = 1{% if group_by_input_shape %}, e.input_dims{% endif %}, coalesce(st.sh, hash(''))) AS kh
    FROM ev e
    LEFT JOIN call_stacks st ON st.trace_id = e.trace_id AND st.event_id = e.event_id
    LEFT JOIN call_flops f
           ON f.trace_id = e.trace_id AND f.event_id = e.event_id
),
{%- endif %}
{%- set keyed = 'keyed' if group_by_stack else 'ev' %}
tree AS (  -- the calls that may be merged (the parent has the same name), are dropped, launched device
           -- work or have memory (not those with only device time: totals reads them from the calls,
           -- ~0.2 CPU-s less at 1 GB): each one's row key and totals, its parent's row key and name, and
           -- for a runtime call that launched device work, the call that owns it: the enclosing op its
           -- External id names (templates/launch_owner.sql), else its innermost enclosing operator or
           -- annotation (the RecordFunction whose External id Kineto gives the launch)
    SELECT c.trace_id, c.event_id, c.parent_event_id, c.kh, c.dropped, c.async, c.self_ns, c.leaf,
           c.device_ns, c.cpu_mem, c.dev_mem, c.launched_ns,
           p.kh AS pkh, hash(p.key) = hash(c.key) AS parent_same_name, p.leaf AS parent_leaf,
           coalesce(x.owner_id, CASE WHEN c.parent_event_id = c.op_event_id OR p.kind_no = 1 THEN c.parent_event_id
                                     ELSE c.op_event_id END) AS owner_id
    FROM {{ keyed }} c
    LEFT JOIN {{ keyed }} p ON p.trace_id = c.trace_id AND p.event_id = c.parent_event_id
    LEFT JOIN ext_owner x ON x.trace_id = c.trace_id AND x.launch_event_id = c.event_id
    -- (a CASE, not an OR: DuckDB then keeps the hash table on the narrow parent side)
    WHERE CASE WHEN c.dropped OR c.async OR c.launched_ns IS NOT NULL OR c.cpu_mem <> 0 OR c.dev_mem <> 0
               THEN true ELSE hash(p.key) = hash(c.key) END
),
dup_candidates AS (  -- a call whose parent has the same name
    SELECT trace_id, event_id, parent_event_id AS into_id, self_ns FROM tree WHERE parent_same_name AND NOT dropped
),
only_children AS (
    SELECT c.trace_id, c.parent_event_id, count(*) AS n
    FROM {{ keyed }} c
    SEMI JOIN dup_candidates d ON d.trace_id = c.trace_id AND d.into_id = c.parent_event_id
    WHERE NOT c.dropped
    GROUP BY c.trace_id, c.parent_event_id
    HAVING count(*) = 1
),
dup AS (  -- ... and no other child: merged into it (torch's _remove_dup_nodes)
    SELECT d.* FROM dup_candidates d
    SEMI JOIN only_children o ON o.trace_id = d.trace_id AND o.parent_event_id = d.into_id
),
dup_chain AS (  -- a chain of merges ends at the first call that is not merged (up to 4 levels)
    SELECT d.trace_id, d.event_id, coalesce(d3.into_id, d2.into_id, d.into_id) AS into_id, d.self_ns
    FROM dup d
    LEFT JOIN dup d2 ON d2.trace_id = d.trace_id AND d2.event_id = d.into_id
    LEFT JOIN dup d3 ON d3.trace_id = d2.trace_id AND d3.event_id = d2.into_id
),
async_into AS (  -- per async call, its nearest enclosing call that is not async (into_id; NULL: none, and
                 -- a call inside it, and only in such calls, is top-level in torch's tree, which has no
                 -- async events). Async events are annotations: the walk stays among them
    WITH RECURSIVE up AS (
        SELECT a.trace_id, a.event_id, a.parent_event_id AS into_id
        FROM ann a
        WHERE a.async AND NOT EXISTS (SELECT 1 FROM ann p WHERE p.trace_id = a.trace_id
                                                          AND p.event_id = a.parent_event_id AND p.async)
        UNION ALL
        SELECT c.trace_id, c.event_id, u.into_id
        FROM ann c JOIN up u ON u.trace_id = c.trace_id AND u.event_id = c.parent_event_id
        WHERE c.async
    )
    SELECT * FROM up
),
moved AS (  -- calls that are not rows (or, async, not in the tree), and the row key of the call that
            -- takes their self time, the device time they launched and their children
    SELECT m.trace_id, m.event_id, t.kh, m.self_ns
    FROM (SELECT trace_id, event_id, into_id, self_ns FROM dup_chain
          UNION ALL
          SELECT trace_id, event_id, parent_event_id, self_ns FROM tree
          WHERE (dropped OR async) AND parent_event_id IS NOT NULL) m
    -- (an async call takes nothing: what would go to it goes to its nearest ancestor that is not async)
    LEFT JOIN async_into a ON a.trace_id = m.trace_id AND a.event_id = m.into_id
    JOIN {{ keyed }} t ON t.trace_id = m.trace_id
                      AND t.event_id = CASE WHEN a.event_id IS NULL THEN m.into_id ELSE a.into_id END
),
base AS (  -- per trace and row key: calls, CPU time
    SELECT trace_id, kh, any_value(key) AS name,
           {%- if group_by_input_shape %} any_value(input_dims) AS input_shapes,{% endif %}
           {%- if group_by_stack %} any_value(sh) AS sh, sum(flops) AS flops,{% endif %}
           ['cpu_op', 'user_annotation', 'python_function', 'runtime'][arg_min(kind_no, (ts_ns, -end_ns)) + 1] AS kind,
           arg_min(depth = 0 OR async OR a.top_event_id IS NOT NULL, (ts_ns, -end_ns)) AS first_top,
           bool_and(async) AS async,
           -- (an async call has no self time: torch's FunctionEvent.self_cpu_time_total)
           count(*) AS count, sum(CASE WHEN async THEN 0 ELSE self_ns END) AS self_ns, sum(end_ns - ts_ns) AS dur_ns
    FROM {{ keyed }} k
    ANTI JOIN dup x ON x.trace_id = k.trace_id AND x.event_id = k.event_id
    LEFT JOIN (SELECT trace_id AS top_trace_id, event_id AS top_event_id FROM async_into WHERE into_id IS NULL) a
           ON a.top_trace_id = k.trace_id AND a.top_event_id = k.parent_event_id
    WHERE NOT k.dropped
    GROUP BY trace_id, kh
),
moved_self AS (
    SELECT trace_id, kh, sum(self_ns) AS self_ns FROM moved GROUP BY ALL
),
mem_raw AS (  -- [memory] bytes
    SELECT trace_id, ts_ns, {{ memory_bytes() }}
    FROM memory_events
    WHERE TRUE {{ run_scope() }} AND bytes IS NOT NULL
),
covered AS (  -- when some call runs, on any thread (a merged call is never at the top)
    {{ merged_intervals('(SELECT trace_id, ts_ns, end_ns FROM ' ~ keyed ~ ' WHERE depth = 0 AND NOT dropped)', ['trace_id']) | indent(4) }}
),
loose_mem AS (  -- [memory] events during no call: torch's '[memory]' row
    SELECT m.trace_id, count(*) AS count, sum(m.cpu_b) AS cpu_mem, sum(m.dev_b) AS dev_mem
    FROM mem_raw m
    ASOF LEFT JOIN covered c ON c.trace_id = m.trace_id AND m.ts_ns >= c.start_ns
    WHERE c.end_ns IS NULL OR m.ts_ns > c.end_ns
    GROUP BY m.trace_id
),
totals AS (  -- the rows' calls with device time (launched from within them)
    SELECT k.trace_id, k.kh, k.leaf, k.device_ns
    FROM {{ keyed }} k
    ANTI JOIN dup x ON x.trace_id = k.trace_id AND x.event_id = k.event_id
    WHERE NOT k.dropped AND NOT k.async AND k.device_ns <> 0
),
mem_calls AS (  -- a call's bytes (calls with some), and its parent's row key: when the parent is merged
                -- or dropped, that of the call it went into (its row key may differ in shapes or stack)
    SELECT k.trace_id, k.kh, CASE WHEN NOT k.async THEN coalesce(m.kh, k.pkh) END AS pkh, k.cpu_mem, k.dev_mem
    FROM tree k
    ANTI JOIN dup x ON x.trace_id = k.trace_id AND x.event_id = k.event_id
    LEFT JOIN moved m ON m.trace_id = k.trace_id AND m.event_id = k.parent_event_id
    WHERE NOT k.dropped AND (k.cpu_mem <> 0 OR k.dev_mem <> 0)
),
mem_own AS (
    SELECT trace_id, kh, sum(cpu_mem) AS cpu_mem, sum(dev_mem) AS dev_mem FROM mem_calls GROUP BY ALL
),
mem_kids AS (  -- the children's, for self memory
    SELECT trace_id, pkh AS kh, sum(cpu_mem) AS cpu_mem, sum(dev_mem) AS dev_mem
    FROM mem_calls WHERE pkh IS NOT NULL GROUP BY ALL
),
owner_other AS (  -- owners that are not the launch call's parent (it is inside a Python function, ...)
    SELECT r.trace_id, r.owner_id, o.kh, o.leaf
    FROM (SELECT DISTINCT trace_id, owner_id FROM tree
          WHERE launched_ns IS NOT NULL AND owner_id IS DISTINCT FROM parent_event_id) r
    JOIN {{ keyed }} o ON o.trace_id = r.trace_id AND o.event_id = r.owner_id
),
owned AS (  -- the device time each call launched itself; a merged call's is its row's (torch lifts its kernels)
    SELECT r.trace_id, coalesce(m.kh, CASE WHEN r.owner_id = r.parent_event_id THEN r.pkh ELSE x.kh END) AS kh,
           r.event_id AS launch_event_id, r.launched_ns AS dev_ns, CASE WHEN r.owner_id = r.parent_event_id THEN r.parent_leaf ELSE x.leaf END AS leaf
    FROM tree r
    LEFT JOIN owner_other x ON x.trace_id = r.trace_id AND x.owner_id = r.owner_id
    LEFT JOIN moved m ON m.trace_id = r.trace_id AND m.event_id = r.owner_id
    WHERE r.launched_ns IS NOT NULL AND r.owner_id IS NOT NULL
),
dev_calls AS (  -- device total: a leaf's is its own
    SELECT trace_id, kh, device_ns AS dev_ns FROM totals WHERE NOT leaf AND device_ns <> 0
    UNION ALL
    SELECT trace_id, kh, dev_ns FROM owned WHERE leaf
),
dev_key AS (
    SELECT t.trace_id, t.kh, t.dev_ns, s.self_ns
    FROM (SELECT trace_id, kh, sum(dev_ns) AS dev_ns FROM dev_calls GROUP BY ALL) t
    LEFT JOIN (SELECT trace_id, kh, sum(dev_ns) AS self_ns FROM owned GROUP BY ALL) s USING (trace_id, kh)
),
{%- if tensor_cores %}
tc_launch AS (  -- the launch calls of kernels using Tensor Cores, and those kernels' time (the rule once per name)
    SELECT r.trace_id, r.event_id, sum(l.dur_ns) AS tc_ns
    FROM launches l
    SEMI JOIN (SELECT name FROM (SELECT DISTINCT name FROM launches WHERE kind = 'kernel' {{ run_scope() }})
               WHERE {{ uses_tensor_cores() }}) n ON n.name = l.name
    JOIN runtime r ON r.trace_id = l.trace_id AND r.correlation = l.correlation
    WHERE l.kind = 'kernel' AND l.dur_ns IS NOT NULL {{ run_scope('l.') }}
    GROUP BY ALL
),
tc_up AS (  -- the calls enclosing each such launch call, and each of TensorBoard's Tensor Cores operators
            -- (up the nesting: parent_event_id); tc_ns: the launch's Tensor Cores time (0 for an operator)
    WITH RECURSIVE up AS (
        SELECT e.trace_id, e.parent_event_id AS event_id, coalesce(t.tc_ns, 0) AS tc_ns
        FROM {{ keyed }} e
        LEFT JOIN tc_launch t ON t.trace_id = e.trace_id AND t.event_id = e.event_id
        WHERE e.parent_event_id IS NOT NULL
          AND (t.event_id IS NOT NULL OR {{ tensor_core_op('e.') }})
        UNION ALL
        SELECT e.trace_id, e.parent_event_id, u.tc_ns
        FROM up u JOIN {{ keyed }} e ON e.trace_id = u.trace_id AND e.event_id = u.event_id
        WHERE e.parent_event_id IS NOT NULL
    )
    SELECT * FROM up
),
tc_key AS (  -- per row key: Tensor Cores time it launched itself (self) and within it (total, as dev_calls:
             -- a leaf's is its own), and eligibility
    SELECT trace_id, kh, sum(self_ns) AS tc_self_ns, sum(total_ns) AS tc_total_ns, bool_or(eligible) AS tc_eligible
    FROM (SELECT o.trace_id, o.kh, t.tc_ns AS self_ns, CASE WHEN o.leaf THEN t.tc_ns ELSE 0 END AS total_ns,
                 true AS eligible
          FROM owned o JOIN tc_launch t ON t.trace_id = o.trace_id AND t.event_id = o.launch_event_id
          UNION ALL
          SELECT k.trace_id, k.kh, 0, CASE WHEN k.leaf THEN 0 ELSE u.tc_ns END, true
          FROM tc_up u JOIN {{ keyed }} k ON k.trace_id = u.trace_id AND k.event_id = u.event_id
          ANTI JOIN dup x ON x.trace_id = k.trace_id AND x.event_id = k.event_id
          WHERE NOT k.dropped AND NOT k.async
          UNION ALL
          SELECT trace_id, kh, 0, 0, true FROM {{ keyed }} WHERE {{ tensor_core_op() }})
    GROUP BY ALL
),
{%- endif %}
flops_key AS (
    {%- if group_by_stack %}
    SELECT trace_id, kh, flops FROM base
    {%- else %}
    -- per name (and shapes): the row key of a cpu_op; a merged call's FLOPs are not counted (torch
    -- drops the call: its parent's, e.g. the aten::add a TorchScript aten::add calls, count once)
    SELECT f.trace_id, hash(f.name, false{% if group_by_input_shape %}, f.input_dims::VARCHAR{% endif %}) AS kh,
           sum(f.flops) AS flops
    FROM call_flops f
    ANTI JOIN dup x ON x.trace_id = f.trace_id AND x.event_id = f.event_id
    GROUP BY ALL
    {%- endif %}
),
host_keys AS (
    SELECT b.trace_id, b.name,
           {%- if group_by_input_shape %} b.input_shapes,{% endif %}
           {%- if group_by_stack %} sk.stack,{% endif %}
           b.kind, b.first_top, b.count,
           -- a row of async calls only has its totals of CPU time and memory: no self, no device
           -- time (torch's FunctionEvent properties; a label may be a record_function ended on another
           -- thread once, and on its own thread another time)
           CASE WHEN b.async THEN 0 ELSE b.self_ns + coalesce(ms.self_ns, 0) END AS self_ns, b.dur_ns,
           coalesce(d.self_ns, 0) AS self_dev_ns, coalesce(d.dev_ns, 0) AS dev_ns,
           coalesce(mo.cpu_mem, 0)::BIGINT AS cpu_mem,
           CASE WHEN b.async THEN 0 ELSE coalesce(mo.cpu_mem, 0) - coalesce(mk.cpu_mem, 0) END::BIGINT AS self_cpu_mem,
           coalesce(mo.dev_mem, 0)::BIGINT AS dev_mem,
           CASE WHEN b.async THEN 0 ELSE coalesce(mo.dev_mem, 0) - coalesce(mk.dev_mem, 0) END::BIGINT AS self_dev_mem,
           f.flops::BIGINT AS flops, false AS device_work
           {%- if tensor_cores %},
           coalesce(tk.tc_eligible, false) AS tc_eligible, coalesce(tk.tc_self_ns, 0) AS tc_self_ns,
           coalesce(tk.tc_total_ns, 0) AS tc_total_ns
           {%- endif %}
    FROM base b
    LEFT JOIN moved_self ms USING (trace_id, kh)
    LEFT JOIN dev_key d USING (trace_id, kh)
    LEFT JOIN mem_own mo USING (trace_id, kh)
    LEFT JOIN mem_kids mk USING (trace_id, kh)
    LEFT JOIN flops_key f USING (trace_id, kh)
    {%- if tensor_cores %}
    LEFT JOIN tc_key tk USING (trace_id, kh)
    {%- endif %}
    {%- if group_by_stack %}
    LEFT JOIN stacks sk ON sk.sh = b.sh
    {%- endif %}
),
device_keys AS (  -- device events (and device-side annotations): device time only
    SELECT trace_id, name,
           {%- if group_by_input_shape %} NULL::VARCHAR AS input_shapes,{% endif %}
           {%- if group_by_stack %} NULL::VARCHAR AS stack,{% endif %}
           arg_min(kind, (ts_ns, -end_ns)) AS kind, true AS first_top, count(*) AS count, 0 AS self_ns, 0 AS dur_ns,
           sum(dur_ns) AS self_dev_ns, sum(dur_ns) AS dev_ns,
           0::BIGINT AS cpu_mem, 0::BIGINT AS self_cpu_mem, 0::BIGINT AS dev_mem, 0::BIGINT AS self_dev_mem,
           NULL::BIGINT AS flops, NOT annotation AS device_work
    -- (launches has every gpu_ops event, its kind being kernel, memcpy or memset, and is a stored
    -- table: reading it skips a pass over the events)
    FROM (SELECT trace_id, kind, name, ts_ns, end_ns, dur_ns, false AS annotation FROM launches
          UNION ALL
          SELECT trace_id, 'gpu_user_annotation', name, ts_ns, end_ns, dur_ns, true FROM gpu_user_annotations)
    WHERE TRUE {{ run_scope() }} AND dur_ns IS NOT NULL
    GROUP BY trace_id, name, annotation
),
per_key AS (
    SELECT * FROM host_keys
    UNION ALL BY NAME
    SELECT * FROM device_keys
    UNION ALL BY NAME
    SELECT trace_id, '[memory]' AS name, 'memory' AS kind, true AS first_top, count, 0 AS self_ns, 0 AS dur_ns,
           0 AS self_dev_ns, 0 AS dev_ns, cpu_mem::BIGINT AS cpu_mem, cpu_mem::BIGINT AS self_cpu_mem,
           dev_mem::BIGINT AS dev_mem, dev_mem::BIGINT AS self_dev_mem, NULL::BIGINT AS flops, false AS device_work
    FROM loose_mem
),
report AS (
    SELECT s.run, s.rank, k.trace_id, k.name,
           {%- if group_by_input_shape %} k.input_shapes,{% endif %}
           {%- if group_by_stack %} k.stack,{% endif %}
           k.kind, k.count,
           100.0 * k.self_ns / nullif(sum(k.self_ns) OVER t, 0) AS self_cpu_pct,
           k.self_ns / 1e3 AS self_cpu_us,
           100.0 * k.dur_ns / nullif(sum(k.self_ns) OVER t, 0) AS cpu_total_pct,
           k.dur_ns / 1e3 AS cpu_total_us,
           k.dur_ns / 1e3 / k.count AS cpu_avg_us,
           k.self_dev_ns / 1e3 AS self_device_us,
           100.0 * k.self_dev_ns / nullif(sum(k.self_dev_ns) FILTER (WHERE k.device_work) OVER t, 0) AS self_device_pct,
           k.dev_ns / 1e3 AS device_total_us,
           {%- if tensor_cores %}
           k.tc_eligible, 100.0 * k.tc_self_ns / nullif(k.self_dev_ns, 0) AS tc_self_pct,
           100.0 * k.tc_total_ns / nullif(k.dev_ns, 0) AS tc_total_pct,
           {%- endif %}
           k.dev_ns / 1e3 / k.count AS device_avg_us,
           k.flops,
           k.cpu_mem AS cpu_mem_bytes, k.self_cpu_mem AS self_cpu_mem_bytes,
           k.dev_mem AS device_mem_bytes, k.self_dev_mem AS self_device_mem_bytes,
           k.first_top
    FROM per_key k
    JOIN scope s USING (trace_id)
    WINDOW t AS (PARTITION BY k.trace_id)
)
SELECT * EXCLUDE (first_top) FROM report
WHERE TRUE {% if top_level_only %}AND first_top{% endif %}
{%- if limit %}
QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY {{ order_by }}) <= $limit
{%- endif %}
ORDER BY run, rank NULLS LAST, trace_id, {{ order_by }}

-- @notes
WITH t AS (
    SELECT f.trace_id, f.file_name FROM trace_files f WHERE TRUE {{ run_scope('f.') }}
){% if group_by_stack %},
no_frames AS (
    SELECT trace_id, file_name FROM t WHERE NOT EXISTS (SELECT 1 FROM python_functions p WHERE p.trace_id = t.trace_id)
),
arg_stack AS (  -- traces without Python frames: does an operator carry a Call stack arg? (the test is in
                -- the select list, after the join: a filter would go down to the scan, which then reads
                -- every operator's args, ~0.6 CPU-s at 1 GB, even when no trace lacks Python frames)
    SELECT c.trace_id, max(CASE WHEN contains(c.args, '"Call stack"') THEN json_exists(c.args, '$."Call stack"') END) AS found
    FROM no_frames n JOIN cpu_ops c ON c.trace_id = n.trace_id
    GROUP BY c.trace_id
){% endif %}
SELECT note FROM (
    SELECT 0 AS k, trace_id, file_name || ': no CPU operators or annotations in this trace' AS note
    FROM t WHERE NOT EXISTS (SELECT 1 FROM cpu_ops c WHERE c.trace_id = t.trace_id)
               AND NOT EXISTS (SELECT 1 FROM user_annotations a WHERE a.trace_id = t.trace_id)
    UNION ALL
    SELECT 1, t.trace_id, t.file_name || ': ' || format('{:,}', count(*)) || ' call(s) with negative self CPU time: '
                          || 'their children overlap each other on the thread (torch subtracts every child''s '
                          || 'duration, and so does duckprof; see README, report ops)'
    FROM (SELECT trace_id FROM cpu_ops WHERE self_ns < 0
          UNION ALL SELECT trace_id FROM user_annotations WHERE self_ns < 0
          UNION ALL SELECT trace_id FROM python_functions WHERE self_ns < 0) n
    JOIN t USING (trace_id)
    GROUP BY t.trace_id, t.file_name
    UNION ALL
    SELECT 4, t.trace_id, t.file_name || ': ' || format('{:,}', count(*)) || ' record_function range(s) not ended on '
                          || 'their thread while profiling (''finished'': false: ended on another thread, or still '
                          || 'open at the stop): the trace gives them the profiler''s stop as end, so their CPU total '
                          || 'is longer than torch''s; as in torch, they have no self CPU time and the calls inside '
                          || 'them are their enclosing range''s'
    FROM (SELECT trace_id FROM user_annotations WHERE unfinished
          UNION ALL SELECT trace_id FROM cpu_ops WHERE unfinished) a
    JOIN t USING (trace_id)
    GROUP BY t.trace_id, t.file_name
    UNION ALL
    -- a call whose tensor input has no recorded shape (Input Dims [] for it: the symbolic-shape
    -- tensors a torch.compile recompile runs ops on) has no FLOP estimate, while torch's
    -- key_averages() counts its FLOPs from the live tensor: say which rows fall short (only
    -- such calls: shapes that fit no signature, as in sampled traces, are another matter)
    SELECT 5, t.trace_id, t.file_name || ': ' || format('{:,}', sum(n)) || ' call(s) of '
                          || string_agg(name || ' (' || n || ')', ', ' ORDER BY name)
                          || ' without a FLOP estimate, where other calls of the name have one (a tensor input '
                          || 'without a recorded shape, Input Dims []: e.g. the symbolic-shape tensors of a '
                          || 'torch.compile recompile): their FLOPs are not in the flops column; torch''s '
                          || 'key_averages() counts them from the live tensors'
    FROM (SELECT trace_id, name, count(*) FILTER (WHERE flops IS NULL AND contains(input_dims, '[]')) AS n
          FROM cpu_op_estimates WHERE trace_id IN (SELECT trace_id FROM t)
          GROUP BY trace_id, name HAVING count(flops) > 0 AND n > 0) g
    JOIN t USING (trace_id)
    GROUP BY t.trace_id, t.file_name
    {%- if group_by_input_shape %}
    UNION ALL
    SELECT 2, trace_id, file_name || ': no input shapes recorded (record_shapes=False): one row per name'
    FROM t WHERE NOT EXISTS (SELECT 1 FROM cpu_ops c WHERE c.trace_id = t.trace_id AND c.input_dims IS NOT NULL)
    {%- endif %}
    {%- if group_by_stack %}
    UNION ALL
    SELECT 3, trace_id, file_name || ': no Python stacks (with_stack=False): one row per name'
    FROM no_frames n LEFT JOIN arg_stack a USING (trace_id)
    WHERE NOT coalesce(a.found, false)
    {%- endif %}
)
ORDER BY k, trace_id
