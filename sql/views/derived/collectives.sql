-- collectives: one row per NCCL / RCCL kernel (a collective or point-to-point
-- operation on one rank), or per gloo:* annotation (gloo's collectives on the
-- host: CPU jobs), with what the trace says about it: its type, process
-- group, sequence number, group size, message size and algorithm.
--
-- A communication kernel is a kernel whose name starts with nccl or rccl
-- (ncclKernel_*, ncclDevKernel_*; RCCL keeps NCCL's names): the rule of
-- gpu_activity's work_class. Its facts come from the kernel's own args
-- (Kineto copies them onto NCCL kernels since PyTorch 2.2: 'Collective name',
-- 'Process Group Name', 'Seq', 'Group size', 'In msg nelems', 'Out msg
-- nelems', 'dtype'), else from the record_param_comms operator that launched
-- it (launches.op_event_id, or the cpu_op that encloses that one). The type is
-- 'Collective name', else the c10d operator's name (c10d::allreduce_,
-- c10d::_allgather_base_, ...), else the kernel's name (ncclKernel_AllReduce_*,
-- ncclDevKernel_SendRecv, ...), in one vocabulary: all_reduce, all_gather,
-- reduce_scatter, all_to_all, broadcast, reduce, send, recv, send_recv, gather,
-- scatter, barrier. The group size is 'Group size', else the number of
-- 'Process Group Ranks', else the trace's world_size.
-- Message size (nccl-tests' convention): the larger of the input and the output
-- buffer, elements x dtype size ('Float' 4 bytes, 'BFloat16' 2, ...): an
-- all_gather's output, a reduce_scatter's input, an all_reduce's buffer.
-- Bus bandwidth factor (nccl-tests, doc/PERFORMANCE.md): all_reduce 2(n-1)/n;
-- all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast, reduce, send,
-- recv, send_recv, gather, scatter 1; barrier none.
-- gloo (torch 2.x on CPU) records neither record_param_comms nor Seq nor the
-- process group on its gloo:* annotations (operators in PyTorch 1.9): the type
-- is the annotation's name, n the world size (a new_group's collectives get the
-- world's n too), the size the first
-- input's 'Input Dims' x 'Input type' (an all_gather's output n times that;
-- a reduce_scatter's one n-th of it).
-- An NCCL kernel whose args and record_param_comms give no size or dtype (before
-- PyTorch 2.2, and the record_param_comms of TensorList collectives) takes them
-- the same way from c10d's nccl:* annotation around its launch call (the launch
-- call's parent; in old traces an nccl:* cpu_op that launched it), as
-- torch-tb-profiler's communication view does; an all_gather's size (n times the
-- input) and a reduce_scatter's output only when n is recorded, not the world
-- size assumed (subgroups are common).
--
-- requires: launches, kernels, cpu_ops, trace_files, user_annotations, runtime
--
-- Columns:
-- trace_id        INTEGER  trace (one rank)
-- event_id        BIGINT   kernels.event_id
-- name            VARCHAR  kernel name
-- device          INTEGER  GPU index (NULL: a gloo collective, on the host)
-- stream          BIGINT   stream (gloo: the host thread)
-- ts_ns           BIGINT   start on the GPU (the rank's arrival), ns since the epoch
-- dur_ns          BIGINT   duration, ns (includes waiting for the other ranks)
-- end_ns          BIGINT   ts_ns + dur_ns
-- op_event_id     BIGINT   cpu_ops.event_id of the record_param_comms (or other) operator that launched it
-- collective      VARCHAR  all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, ...
-- process_group   VARCHAR  'Process Group Name' (or 'Process Group ID'), e.g. '0'; NULL: not recorded
-- pg_desc         VARCHAR  'Process Group Description', e.g. 'default_pg'
-- pg_ranks        VARCHAR  'Process Group Ranks' as written, e.g. '[0, 1]'
-- seq             BIGINT   'Seq': the collective's number in its process group (NULL: not recorded)
-- occurrence      BIGINT   1, 2, ... in start order among the trace's kernels of the same process group
--                          and type (gloo: and dtype and size, templates/collectives.sql host_signature)
-- group_size      INTEGER  ranks taking part (n)
-- dtype           VARCHAR  'dtype' as written, e.g. 'Float'
-- dtype_bytes     INTEGER  bytes per element of dtype (NULL: unknown)
-- in_nelems       BIGINT   'In msg nelems'
-- out_nelems      BIGINT   'Out msg nelems'
-- msg_bytes       BIGINT   greatest(in_nelems, out_nelems) x dtype_bytes
-- busbw_factor    DOUBLE   bus bandwidth / algorithm bandwidth for this type and n (NULL: n < 1)
-- nccl_algorithm  VARCHAR  from the kernel name: RING, TREE, COLLNET_DIRECT, NVLS, PAT, ... (NULL: not named)
-- nccl_protocol   VARCHAR  from the kernel name: LL, LL128 or SIMPLE (NULL: not named)
{% from "templates/collectives.sql" import host_signature %}
{% macro collective_type(x) -%}
CASE WHEN {{ x }} IS NULL THEN NULL
     WHEN contains({{ x }}, 'allreduce') THEN 'all_reduce'
     WHEN contains({{ x }}, 'reducescatter') THEN 'reduce_scatter'
     WHEN contains({{ x }}, 'allgather') THEN 'all_gather'
     WHEN contains({{ x }}, 'alltoall') THEN 'all_to_all'
     WHEN contains({{ x }}, 'broadcast') THEN 'broadcast'
     WHEN contains({{ x }}, 'sendrecv') THEN 'send_recv'
     WHEN contains({{ x }}, 'send') THEN 'send'
     WHEN contains({{ x }}, 'recv') THEN 'recv'
     WHEN contains({{ x }}, 'barrier') THEN 'barrier'
     WHEN contains({{ x }}, 'reduce') THEN 'reduce'
     WHEN contains({{ x }}, 'gather') THEN 'gather'
     WHEN contains({{ x }}, 'scatter') THEN 'scatter'
END
{%- endmacro %}
{% macro dtype_bytes(x) -%}
CASE lower({{ x }})
     WHEN 'float' THEN 4 WHEN 'double' THEN 8 WHEN 'half' THEN 2 WHEN 'bfloat16' THEN 2
     WHEN 'long' THEN 8 WHEN 'int' THEN 4 WHEN 'short' THEN 2 WHEN 'char' THEN 1 WHEN 'byte' THEN 1
     WHEN 'bool' THEN 1 WHEN 'complexhalf' THEN 4 WHEN 'complexfloat' THEN 8
     WHEN 'complexdouble' THEN 16 WHEN 'uint16' THEN 2 WHEN 'uint32' THEN 4 WHEN 'uint64' THEN 8
     ELSE CASE WHEN lower({{ x }}) LIKE 'float8%' THEN 1 END END
{%- endmacro %}
{% macro input_dtype(x) -%}
{#- an 'Input type' entry (C++ type names) as a 'dtype' arg spells it -#}
CASE lower(regexp_replace({{ x }}, '^c10::', ''))
     WHEN 'float' THEN 'Float' WHEN 'double' THEN 'Double' WHEN 'half' THEN 'Half'
     WHEN 'bfloat16' THEN 'BFloat16' WHEN 'long int' THEN 'Long' WHEN 'long' THEN 'Long' WHEN 'int' THEN 'Int'
     WHEN 'short int' THEN 'Short' WHEN 'signed char' THEN 'Char' WHEN 'unsigned char' THEN 'Byte'
     WHEN 'bool' THEN 'Bool' END
{%- endmacro %}
{% macro out_nelems(collective, in_nelems, n) -%}
{#- an all_gather's output is n inputs; a reduce_scatter's output one n-th of its input -#}
CASE {{ collective }} WHEN 'all_gather' THEN {{ in_nelems }} * {{ n }}
                      WHEN 'reduce_scatter' THEN {{ in_nelems }} // {{ n }}
                      ELSE {{ in_nelems }} END
{%- endmacro %}
{% macro squash(x) -%}
regexp_replace(lower({{ x }}), '[^a-z0-9]', '', 'g')
{%- endmacro %}
CREATE OR REPLACE VIEW collectives AS
WITH k AS (
    SELECT trace_id, event_id, name, device, stream, ts_ns, dur_ns, end_ns, op_event_id
    FROM launches
    WHERE kind = 'kernel' AND (name ILIKE 'nccl%' OR name ILIKE 'rccl%')
),
kargs AS (
    SELECT trace_id, event_id, args FROM kernels WHERE name ILIKE 'nccl%' OR name ILIKE 'rccl%'
),
ann AS (  -- the nccl:* annotation (or old nccl:* cpu_op) of the launch: its first input's dtype and elements
    SELECT trace_id, event_id,
           {{ input_dtype("json_extract_string(args, '$.\"Input type\"[0]')") }} AS ann_dtype,
           list_product(try_cast(json_extract(args, '$."Input Dims"[0]') AS BIGINT[]))::BIGINT AS ann_nelems
    FROM (SELECT k.trace_id, k.event_id, coalesce(u.args, o.args) AS args
          FROM k
          JOIN launches l USING (trace_id, event_id)
          LEFT JOIN runtime r ON r.trace_id = l.trace_id AND r.event_id = l.launch_event_id
          LEFT JOIN user_annotations u ON u.trace_id = r.trace_id AND u.event_id = r.parent_event_id
                                      AND u.name LIKE 'nccl:%'
          LEFT JOIN cpu_ops o ON o.trace_id = k.trace_id AND o.event_id = k.op_event_id AND o.name LIKE 'nccl:%')
    WHERE args IS NOT NULL
),
ops AS (
    -- the launching op and the op it is inside (their names: the args are read below, once, of the
    -- record_param_comms only)
    SELECT k.trace_id, k.event_id, o.event_id AS o_id, o.name AS o_name, p.event_id AS p_id, p.name AS p_name
    FROM k
    LEFT JOIN cpu_ops o ON o.trace_id = k.trace_id AND o.event_id = k.op_event_id
    LEFT JOIN cpu_ops p ON p.trace_id = o.trace_id AND p.event_id = o.op_event_id
),
rpc AS (
    -- its record_param_comms (itself, or the op it is inside) and the c10d op
    SELECT r.trace_id, r.event_id, r.o_id AS op_event_id, a.args AS rpc_args, r.op_name
    FROM (SELECT *, CASE WHEN o_name = 'record_param_comms' THEN o_id
                         WHEN p_name = 'record_param_comms' THEN p_id END AS rpc_id,
                    CASE WHEN o_name = 'record_param_comms' THEN p_name ELSE o_name END AS op_name
          FROM ops) r
    -- (rpc_id is always a record_param_comms: the same rows as a join with every cpu_op, whose
    -- hash table held every op's args)
    LEFT JOIN (SELECT trace_id, event_id, args FROM cpu_ops WHERE name = 'record_param_comms') a
        ON a.trace_id = r.trace_id AND a.event_id = r.rpc_id
),
facts AS (
    SELECT k.*, o.op_event_id AS rpc_op_event_id,
           {% for key, col in [('Collective name', 'coll_name'), ('Process Group Name', 'pg_name'),
                               ('Process Group ID', 'pg_id'), ('Process Group Description', 'pg_desc'),
                               ('Process Group Ranks', 'pg_ranks'), ('Seq', 'seq'), ('Group size', 'group_size'),
                               ('In msg nelems', 'in_nelems'), ('Out msg nelems', 'out_nelems'),
                               ('dtype', 'dtype')] %}
           {%- set value = "coalesce(json_extract_string(a.args, '$.\"" ~ key ~ "\"'), "
                           ~ "json_extract_string(o.rpc_args, '$.\"" ~ key ~ "\"'))" %}
           {%- if col == 'in_nelems' %}
           -- (else the nccl:* annotation's first input: from_ann)
           coalesce(try_cast({{ value }} AS BIGINT), n.ann_nelems) AS in_nelems,
           n.ann_nelems IS NOT NULL AND {{ value }} IS NULL AS from_ann,
           {%- elif col == 'dtype' %}
           coalesce({{ value }}, n.ann_dtype) AS dtype,
           {%- else %}
           {{ value }} AS {{ col }},
           {%- endif %}
           {% endfor %}
           o.op_name
    FROM k
    LEFT JOIN kargs a USING (trace_id, event_id)
    LEFT JOIN rpc o USING (trace_id, event_id)
    LEFT JOIN ann n USING (trace_id, event_id)
),
typed AS (
    SELECT f.*,
           coalesce({{ collective_type(squash('f.coll_name')) }},
                    {{ collective_type(squash("regexp_replace(f.op_name, '^c10d::', '')")) }},
                    {{ collective_type(squash("regexp_replace(f.name, '^[nr]ccl(Dev)?Kernel_', '')")) }},
                    lower(regexp_extract(f.name, '^[nr]ccl(?:Dev)?Kernel_([A-Za-z]+)', 1)),
                    'unknown') AS collective,
           coalesce(try_cast(f.group_size AS INTEGER),
                    nullif(len(string_split(regexp_replace(f.pg_ranks, '[\[\] ]', '', 'g'), ',')), 0)::INTEGER
                        * (CASE WHEN regexp_matches(f.pg_ranks, '[0-9]') THEN 1 END),
                    t.world_size) AS n,
           -- n recorded for this collective, not assumed from the world size (a subgroup's is smaller)
           try_cast(f.group_size AS INTEGER) IS NOT NULL
               OR regexp_matches(coalesce(f.pg_ranks, ''), '[0-9]') AS n_known,
           {{ dtype_bytes('f.dtype') }} AS dtype_bytes
    FROM facts f
    LEFT JOIN trace_files t USING (trace_id)
),
gloo AS (
    -- gloo's host collectives (CPU, no kernel): the gloo:* annotation on its worker thread, whose time
    -- (like a kernel's) includes waiting for the other ranks; the size from its first input's dims
    -- and type (no Seq, no process group, no record_param_comms on them)
    SELECT u.trace_id, u.event_id, u.name, NULL::INTEGER AS device, u.tid AS stream, u.ts_ns, u.dur_ns, u.end_ns,
           u.op_event_id, regexp_replace(u.name, '^gloo:', '') AS collective, t.world_size AS n,
           {{ input_dtype("json_extract_string(u.args, '$.\"Input type\"[0]')") | indent(11) }} AS dtype,
           list_product(json_extract(u.args, '$."Input Dims"[0]')::BIGINT[])::BIGINT AS in_nelems
    FROM (SELECT trace_id, event_id, name, tid, ts_ns, dur_ns, end_ns, op_event_id, args
          FROM user_annotations WHERE name LIKE 'gloo:%'
          UNION ALL  -- (PyTorch 1.9 wrote c10d's annotations as operators)
          SELECT trace_id, event_id, name, tid, ts_ns, dur_ns, end_ns, op_event_id, args
          FROM cpu_ops WHERE name LIKE 'gloo:%') u
    LEFT JOIN trace_files t USING (trace_id)
),
gloo_typed AS (
    SELECT *, {{ dtype_bytes('dtype') }} AS dtype_bytes, {{ out_nelems('collective', 'in_nelems', 'n') }} AS out_nelems
    FROM gloo
),
both_kinds AS (
    SELECT trace_id, event_id, name, device, stream, ts_ns, dur_ns, end_ns, rpc_op_event_id AS op_event_id,
           collective, coalesce(pg_name, pg_id) AS process_group, pg_desc, pg_ranks, try_cast(seq AS BIGINT) AS seq,
           n, dtype, dtype_bytes::INTEGER AS dtype_bytes,
           -- from the annotation (its input only): an all_gather's size needs n, a reduce_scatter's output too
           CASE WHEN from_ann AND collective = 'all_gather' AND NOT n_known THEN NULL ELSE in_nelems END AS in_nelems,
           CASE WHEN NOT from_ann THEN try_cast(out_nelems AS BIGINT)
                WHEN collective IN ('all_gather', 'reduce_scatter') AND NOT n_known THEN NULL
                ELSE {{ out_nelems('collective', 'in_nelems', 'n') }} END AS out_nelems
    FROM typed
    UNION ALL
    SELECT trace_id, event_id, name, device, stream, ts_ns, dur_ns, end_ns, op_event_id, collective,
           NULL, NULL, NULL, NULL, n, dtype, dtype_bytes, in_nelems, out_nelems
    FROM gloo_typed
)
SELECT trace_id, event_id, name, device, stream, ts_ns, dur_ns, end_ns, op_event_id,
       collective, process_group, pg_desc, pg_ranks,
       seq,
       row_number() OVER (PARTITION BY trace_id, process_group, collective, {{ host_signature() }}
                          ORDER BY ts_ns, event_id) AS occurrence,
       n AS group_size, dtype, dtype_bytes, in_nelems, out_nelems,
       (greatest(in_nelems, out_nelems) * dtype_bytes)::BIGINT AS msg_bytes,
       CASE WHEN n < 1 THEN NULL  -- a group of no rank (a damaged 'Group size'): n - 1 over 0 is -inf
            WHEN collective = 'all_reduce' THEN 2.0 * (n - 1) / n
            WHEN collective IN ('all_gather', 'reduce_scatter', 'all_to_all') THEN 1.0 * (n - 1) / n
            WHEN collective IN ('broadcast', 'reduce', 'send', 'recv', 'send_recv', 'gather', 'scatter') THEN 1.0
       END AS busbw_factor,
       nullif(regexp_extract(name, '_(RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|NVLS_TREE|NVLS|PAT)_', 1), '')
           AS nccl_algorithm,
       nullif(regexp_extract(name, '_(LL128|LL|SIMPLE)(?:_|\(|$)', 1), '') AS nccl_protocol
FROM both_kinds;
