-- collectives: matching one collective across the ranks of a run.
-- collective_arrivals(src): one row per (run, instance, trace) of the
--   collective kernels in src (rows of the collectives view, or a subset:
--   trace_id, name, ts_ns, process_group, seq, collective, occurrence, dtype,
--   in_nelems), where an
--   instance is one collective operation of a process group: its 'Seq' when
--   the trace records it, else its type and occurrence (the n-th of that type
--   in the process group on that rank; for gloo, which records no process
--   group, of that type, dtype and size: host_signature). Columns: run, instance,
--   process_group, collective, trace_id,
--   arrival_ns (the rank's first kernel of the instance started: it arrived),
--   ranks (traces that took part), first_ns, last_ns (the first and the last
--   arrival), last_trace_id (the trace that arrived last), wait_ns (last_ns -
--   arrival_ns: how long this rank waited for the last one). Instances seen
--   on one rank only are left out (nothing to compare). Only traces profiled
--   at the same time are compared: a run of a schedule's cycles (repeat=N:
--   each rank writes a trace per cycle) holds one trace per rank and cycle,
--   whose first collective of a type would otherwise be matched with the
--   other cycles' first (by order; Seq numbers differ between cycles). Traces
--   that overlap in time, chained, form one profiled window.
--   Point-to-point operations (send, recv, send_recv) are no collective
--   instance: each pairs one rank with one peer, which gloo's annotations do
--   not name, and NCCL numbers them with a counter of their own (seqP2P_,
--   its 'Seq' beside the collectives' seqCollective_): matched by type and
--   order, or by Seq, they would pair a rank's send with another pair's send
--   (or an all_reduce of the same Seq). They are left out.
{#- host_signature(p): for a gloo collective (no process group, no Seq), its dtype and size
    ('Float x1000'; an all_to_all's dtype only: its splits may differ by rank; a scatter's '*':
    only its root records inputs, the other ranks' annotations have no Input Dims nor type),
    else NULL; the collectives view numbers occurrences per signature, so that a subgroup's
    collectives on some ranks do not shift the order of the world's on the others -#}
{% macro host_signature(p='') -%}
CASE WHEN {{ p }}name LIKE 'gloo:%'
     THEN CASE WHEN {{ p }}collective = 'scatter' THEN '*'
               ELSE coalesce({{ p }}dtype, '?') || CASE WHEN {{ p }}collective <> 'all_to_all'
                                                       THEN ' x' || coalesce({{ p }}in_nelems::VARCHAR, '?') ELSE '' END
          END END
{%- endmacro %}
{% macro collective_arrivals(src) -%}
WITH profiled_windows AS (  -- a run's traces that overlap in time, chained: one window each
    SELECT trace_id, sum(starts::INTEGER) OVER (PARTITION BY run ORDER BY first_ts_ns, trace_id) AS profiled_window
    FROM (SELECT trace_id, run, first_ts_ns,
                 coalesce(first_ts_ns > max(last_end_ns) OVER (PARTITION BY run ORDER BY first_ts_ns, trace_id
                                                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                          false) AS starts  -- the first trace, or one without events: no new window
          FROM trace_files)
),
per_rank AS (
    SELECT f.run, pw.profiled_window, c.process_group, c.collective,
           coalesce(c.process_group, '?') || '/' || CASE WHEN c.seq IS NOT NULL THEN 'seq ' || c.seq
                                                        ELSE c.collective || coalesce(' ' || {{ host_signature('c.') }}, '')
                                                             || ' #' || c.occurrence END AS instance,
           c.trace_id, min(c.ts_ns) AS arrival_ns
    FROM {{ src }} c
    JOIN trace_files f USING (trace_id)
    JOIN profiled_windows pw USING (trace_id)
    WHERE c.collective NOT IN ('send', 'recv', 'send_recv')
    GROUP BY f.run, pw.profiled_window, c.process_group, c.collective, instance, c.trace_id
),
instances AS (
    SELECT *, count(*) OVER w AS ranks, min(arrival_ns) OVER w AS first_ns, max(arrival_ns) OVER w AS last_ns,
           arg_max(trace_id, arrival_ns) OVER w AS last_trace_id
    FROM per_rank
    WINDOW w AS (PARTITION BY run, profiled_window, instance)
)
SELECT run, instance, process_group, collective, trace_id, arrival_ns, ranks, first_ns, last_ns, last_trace_id, last_ns - arrival_ns AS wait_ns
FROM instances
WHERE ranks >= 2
{%- endmacro %}
