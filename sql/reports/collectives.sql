-- collectives: NCCL / RCCL collectives per type and process group: count, message size, time, bandwidth.
-- question: Which collectives take the communication time, how big are they, and what bandwidth do they reach?
--
-- One row per run, collective type and process group (with --by-rank: per rank
-- too) over the collectives view (one row per NCCL/RCCL kernel; its header
-- says where type, process group, group size and message size come from).
-- Bandwidth as nccl-tests defines it: algorithm bandwidth = message bytes /
-- kernel time (total bytes / total time over the calls with a known size);
-- bus bandwidth = algorithm bandwidth x the type's factor (all_reduce
-- 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast,
-- reduce, send/recv 1), comparable with the link's peak: busbw_peak_pct =
-- bus bandwidth / the device's interconnect peak per direction
-- (trace_interconnects; NVLink, PCIe or Infinity Fabric, one node). A kernel's
-- time includes waiting for the ranks that arrive late, so a straggler lowers
-- the bandwidth of everyone else (see spread and `report ranks`).
-- overlap_pct: how much of these kernels' time a compute kernel ran on the same
-- GPU (the union of compute kernels, gpu_activity's work_class; none for gloo's
-- host collectives, which run on no device), HTA's
-- get_comm_comp_overlap restricted to the row's kernels (`report ranks` gives
-- HTA's figure per rank, over all its communication kernels).
-- spread: per collective operation matched across the run's ranks (by process
-- group and 'Seq', else by type and order: templates/collectives.sql), the
-- time from the first rank's kernel start to the last one's. Point-to-point
-- operations (send, recv) are not matched (each pairs with one peer): no spread.
--
-- option: --by-rank FLAG  one row per rank as well
-- option: --limit/-n INTEGER >= 0 = 0  at most N rows (0 = all)
-- requires: collectives, trace_files, trace_interconnects, gpu_activity
-- example: duckprof report collectives --db perf.duckdb --run job42
--
-- Columns:
-- run                VARCHAR  run label
-- rank               INTEGER  rank of the trace (only with --by-rank)
-- trace_id           INTEGER  trace (only with --by-rank)
-- collective         VARCHAR  all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, ...
-- process_group      VARCHAR  'Process Group Name' (NULL: not recorded)
-- pg_desc            VARCHAR  [wide] 'Process Group Description', e.g. 'default_pg'
-- group_size         INTEGER  ranks in the collective (n; the largest seen)
-- calls              BIGINT   kernels (over all ranks of the row)
-- ranks              BIGINT   ranks with such kernels (a trace without a rank counts as one; a rank's traces of
--                             several profiled windows, a schedule's cycles, as one)
-- msg_bytes          DOUBLE   mean message size per call, bytes (NULL: no size recorded)
-- total_bytes        BIGINT   [wide] message bytes of all calls with a known size
-- total_us           DOUBLE   summed kernel time, µs
-- mean_us            DOUBLE   mean kernel time, µs
-- algbw_gbps         DOUBLE   algorithm bandwidth: bytes / kernel time, GB/s
-- busbw_gbps         DOUBLE   bus bandwidth: algbw x the type's factor, GB/s
-- interconnect_gbps  DOUBLE   [wide] the device's link peak per direction, GB/s (NULL: not known)
-- busbw_peak_pct     DOUBLE   busbw_gbps / interconnect_gbps, %
-- overlap_pct        DOUBLE   of the kernels' time, share during which a compute kernel ran on the GPU, %
-- spread_mean_us     DOUBLE   mean start spread across ranks of the matched operations, µs
-- spread_max_us      DOUBLE   [wide] the largest spread, µs
-- nccl_algorithm     VARCHAR  [wide] algorithms named by the kernels (RING, TREE, ...), comma-separated
-- nccl_protocol      VARCHAR  [wide] protocols named by the kernels (LL, LL128, SIMPLE)
{% from "templates/scope.sql" import run_scope with context %}
{% from "templates/intervals.sql" import covered_length, merged_intervals, overlaps_any %}
{% from "templates/collectives.sql" import collective_arrivals %}
WITH c AS (
    SELECT c.*, f.run, f.rank, i.interconnect_gbps
    FROM collectives c
    JOIN trace_files f USING (trace_id)
    LEFT JOIN trace_interconnects i ON i.trace_id = c.trace_id AND i.device = c.device
    WHERE TRUE {{ run_scope('c.') }}
),
comm AS (  -- the stretches some collective runs on each device
    {{ merged_intervals('c', ['trace_id', 'device']) | indent(4) }}
),
near AS (  -- the compute events that overlap one: the others cover no collective
    SELECT trace_id, device, ts_ns, end_ns
    FROM ({{ overlaps_any("(SELECT trace_id, device, ts_ns, end_ns FROM gpu_activity "
                          "WHERE work_class = 'compute' " ~ run_scope() ~ ")", 'comm', ['trace_id', 'device'],
                          name='near') | indent(10) }})
    WHERE near
),
compute AS (  -- their union, per device
    {{ merged_intervals('near', ['trace_id', 'device']) | indent(4) }}
),
covered AS (
    {{ covered_length('c', 'compute', ['trace_id', 'device']) | indent(4) }}
),
arrivals AS (
    {{ collective_arrivals('c') | indent(4) }}
),
spreads AS (
    SELECT run, collective, process_group{% if by_rank %}, trace_id{% endif %},
           avg(last_ns - first_ns) AS spread_mean_ns, max(last_ns - first_ns) AS spread_max_ns
    FROM arrivals
    GROUP BY ALL
),
g AS (
    SELECT run, {% if by_rank %}rank, trace_id, {% endif %}collective, process_group,
           string_agg(DISTINCT pg_desc, ', ' ORDER BY pg_desc) AS pg_desc,
           max(group_size) AS group_size, count(*) AS calls, count(DISTINCT coalesce(rank::VARCHAR, 'trace ' || trace_id)) AS ranks,
           avg(msg_bytes) AS msg_bytes, sum(msg_bytes)::BIGINT AS total_bytes,
           sum(dur_ns) AS total_ns,
           sum(msg_bytes) / nullif(sum(dur_ns) FILTER (WHERE msg_bytes IS NOT NULL), 0) AS algbw_gbps,
           -- an exact sum (DECIMAL): a sum of doubles depends on the order DuckDB's threads add them in
           sum((msg_bytes * busbw_factor)::DECIMAL(38, 9))::DOUBLE
               / nullif(sum(dur_ns) FILTER (WHERE msg_bytes IS NOT NULL AND busbw_factor IS NOT NULL), 0)
               AS busbw_gbps,
           min(interconnect_gbps) AS interconnect_gbps,
           -- gloo's collectives run on the host: no device, nothing to overlap them on it
           sum(covered_ns) FILTER (WHERE device IS NOT NULL) AS overlap_ns,
           sum(dur_ns) FILTER (WHERE device IS NOT NULL) AS device_ns,
           string_agg(DISTINCT nccl_algorithm, ',' ORDER BY nccl_algorithm) AS nccl_algorithm,
           string_agg(DISTINCT nccl_protocol, ',' ORDER BY nccl_protocol) AS nccl_protocol
    FROM covered
    GROUP BY ALL
)
SELECT g.run, {% if by_rank %}g.rank, g.trace_id, {% endif %}g.collective, g.process_group, g.pg_desc,
       g.group_size, g.calls, g.ranks, g.msg_bytes, g.total_bytes,
       g.total_ns / 1e3 AS total_us, g.total_ns / g.calls / 1e3 AS mean_us,
       g.algbw_gbps, g.busbw_gbps, g.interconnect_gbps,
       100.0 * g.busbw_gbps / g.interconnect_gbps AS busbw_peak_pct,
       100.0 * g.overlap_ns / nullif(g.device_ns, 0) AS overlap_pct,
       s.spread_mean_ns / 1e3 AS spread_mean_us, s.spread_max_ns / 1e3 AS spread_max_us,
       g.nccl_algorithm, g.nccl_protocol
FROM g
LEFT JOIN spreads s ON s.run = g.run AND s.collective = g.collective
                   AND s.process_group IS NOT DISTINCT FROM g.process_group
                   {% if by_rank %}AND s.trace_id = g.trace_id{% endif %}
ORDER BY g.run, {% if by_rank %}g.rank NULLS LAST, g.trace_id, {% endif %}g.total_ns DESC, g.collective, g.process_group
{%- if limit %}
LIMIT $limit
{%- endif %}

-- @notes
WITH c AS (
    SELECT c.*, f.file_name FROM collectives c JOIN trace_files f USING (trace_id) WHERE TRUE {{ run_scope('c.') }}
)
SELECT note, instead FROM (
    SELECT 0 AS k, 'no NCCL/RCCL kernels in ' || {% if run is not none %}'run ''' || $run || ''''{% else %}'the database'{% endif %} AS note,
           true AS instead
    WHERE NOT EXISTS (SELECT 1 FROM c)
    UNION ALL
    SELECT 1, count(*) || ' of ' || (SELECT count(*) FROM c WHERE device IS NOT NULL)
              || ' communication kernels record no message size '
              || '(In/Out msg nelems and dtype on the kernel or its record_param_comms, or an nccl:* annotation''s'
              || ' input; an all_gather''s needs its group size): no bandwidth for them',
           false
    FROM c WHERE msg_bytes IS NULL AND device IS NOT NULL HAVING count(*) > 0
    UNION ALL
    -- gloo's (host) collectives: the size is on the annotation, which a non-root scatter leaves empty (its
    -- tensors are on the c10d::scatter_ op of the calling thread; the annotation is on gloo's own thread)
    SELECT 1, count(*) || ' of ' || (SELECT count(*) FROM c WHERE device IS NULL AND name <> 'gloo:barrier')
              || ' gloo collectives record no message size (Input Dims and type on their gloo:* annotation, '
              || 'written with record_shapes only; a non-root scatter''s has none): no bandwidth for them',
           false
    FROM c WHERE msg_bytes IS NULL AND device IS NULL AND name <> 'gloo:barrier' HAVING count(*) > 0  -- a barrier moves no message
    UNION ALL
    SELECT 2, 'no process group recorded: collectives are matched across ranks by type and order'
              || CASE WHEN EXISTS (SELECT 1 FROM c WHERE name LIKE 'gloo:%') THEN ' (gloo''s: by type, dtype, size and order)'
                      ELSE '' END, false
    WHERE EXISTS (SELECT 1 FROM c) AND NOT EXISTS (SELECT 1 FROM c WHERE process_group IS NOT NULL)
    UNION ALL
    SELECT 3, count(*) || ' gloo collectives run on the host (no device): no overlap with compute, no '
              || 'interconnect peak', false
    FROM c WHERE device IS NULL HAVING count(*) > 0
    UNION ALL
    -- gloo names no process group on its collectives: n is the world size, wrong for a smaller group's
    SELECT 4, 'gloo records no process group: n is the world size (' || max(c.group_size) || '), but the job has '
              || 'process groups of ' || string_agg(DISTINCT p.size::VARCHAR, ', ' ORDER BY p.size::VARCHAR)
              || ' ranks (distributedInfo.pg_config): bus bandwidth of their collectives is off', false
    FROM c
    JOIN (SELECT trace_id, unnest(pg_sizes) AS size FROM trace_files) p
        ON p.trace_id = c.trace_id AND p.size <> c.group_size
    WHERE c.name LIKE 'gloo:%'
    HAVING count(*) > 0
    UNION ALL
    SELECT 5, 'no interconnect peak known for ' || string_agg(DISTINCT coalesce(t.peak_device, 'device ' || c.device), ', ')
              || ': no busbw_peak_pct', false
    FROM c LEFT JOIN trace_interconnects t ON t.trace_id = c.trace_id AND t.device = c.device
    WHERE t.interconnect_gbps IS NULL AND c.device IS NOT NULL
    HAVING count(*) > 0
)
ORDER BY k
