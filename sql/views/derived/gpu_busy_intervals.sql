-- gpu_busy_intervals: when the GPU was busy: the union of the device activity
-- intervals (gpu_activity: kernels, memcpys, memsets), merged per device
-- (scope 'device': overlapping work on several streams counts once) and per
-- stream (scope 'stream').
--
-- Merging is HTA's merge_kernel_intervals (sql/templates/intervals.sql,
-- merged_intervals): sort by start; an interval starts a new busy interval when
-- it starts strictly after the running maximum end of the earlier ones, so
-- touching intervals merge.
--
-- Also a table macro of the same name,
-- gpu_busy_intervals(exclude_last_step := false, hta := false, work_classes := NULL):
-- exclude_last_step and hta as in gpu_activity; work_classes, a list such as ['compute']
-- or ['compute', 'communication'], merges only events of those work classes
-- (gpu_activity.work_class); NULL merges all.
--
-- requires: gpu_activity
--
-- Columns:
-- trace_id            INTEGER  trace
-- device              INTEGER  GPU index
-- scope               VARCHAR  'device' (all streams of the device) or 'stream'
-- stream              BIGINT   the stream (scope 'stream'); NULL for scope 'device'
-- interval_no         BIGINT   1, 2, ... in time order within (trace, device, scope, stream)
-- start_ns            BIGINT   start, ns since the epoch
-- end_ns              BIGINT   end, ns since the epoch
-- dur_ns              BIGINT   end_ns - start_ns
-- ops                 BIGINT   device events merged into this interval
-- first_event_id      BIGINT   gpu_activity.event_id of the event that opens the interval
-- first_launch_ts_ns  BIGINT   start of that event's launch call (NULL if not in the trace)
{% from "templates/intervals.sql" import merged_intervals %}
CREATE OR REPLACE MACRO gpu_busy_intervals(exclude_last_step := false, hta := false, work_classes := NULL) AS TABLE
WITH a AS (
    SELECT trace_id, device, stream, event_id, ts_ns, end_ns, launch_ts_ns
    FROM gpu_activity(exclude_last_step := exclude_last_step, hta := hta)
    WHERE work_classes IS NULL OR list_contains(work_classes, work_class)
),
both_scopes AS (
    SELECT trace_id, device, 'device' AS scope, NULL::BIGINT AS stream, event_id, ts_ns, end_ns, launch_ts_ns FROM a
    UNION ALL
    SELECT trace_id, device, 'stream' AS scope, stream, event_id, ts_ns, end_ns, launch_ts_ns FROM a
)
SELECT trace_id, device, scope, stream, interval_no::BIGINT AS interval_no, start_ns, end_ns, dur_ns,
       ops, first_event_id, first_launch_ts_ns
FROM ({{ merged_intervals('both_scopes', ['trace_id', 'device', 'scope', 'stream'],
                          order=['launch_ts_ns NULLS LAST', 'event_id'],
                          firsts={'first_event_id': 'event_id', 'first_launch_ts_ns': 'launch_ts_ns'},
                          count='ops') }});

CREATE OR REPLACE VIEW gpu_busy_intervals AS SELECT * FROM gpu_busy_intervals();
