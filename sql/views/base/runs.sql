-- runs: one row per run label in the database, with its tags and the facts
-- about its traces that were computed when they were loaded.
--
-- Reads only the tables (traces, run_tags, trace_facts): listing runs never
-- reads events, however big the database. trace_facts holds what the
-- trace_summary view computes from the events, stored at load; a trace without
-- facts (loaded by a load that was cut short) counts as unknown until the next
-- load or `duckprof migrate` fills them in.
--
-- requires: traces, run_tags, trace_facts
--
-- Columns:
-- run              VARCHAR              label given at load (--run)
-- traces           BIGINT               trace files in the run
-- ranks            VARCHAR              the ranks in numeric order, consecutive ones as a range
--                                       ('0-7', '0,2,4-6'); NULL when no trace has a rank
-- world_size       INTEGER              ranks in the job (distributedInfo.world_size, the largest
--                                       of its traces); NULL when not recorded
-- devices          BIGINT               GPUs with device activity, summed over the traces (NULL: facts
--                                       missing)
-- steps            BIGINT               ProfilerStep#N annotations of the trace with the most
-- step_mean_us     DOUBLE               mean ProfilerStep duration over every step of every trace, µs
-- busy_pct         DOUBLE               GPU busy time / GPU window over every device of every trace, %
--                                       (union of kernels, memcpys, memsets per device; window: first
--                                       device event start to last end)
-- tags             MAP(VARCHAR, VARCHAR)  its tags (run_tags), e.g. {commit=abc123, batch=64}
-- events           BIGINT               [wide] events in the run
-- json_bytes       BIGINT               [wide] uncompressed JSON loaded
-- first_loaded_at  TIMESTAMP            [wide] when its first trace was loaded (UTC)
-- last_loaded_at   TIMESTAMP            when its last trace was loaded (UTC)
CREATE OR REPLACE VIEW runs AS
WITH islands AS (
    -- consecutive ranks share rank - (its position among the run's ranks)
    SELECT run, min(rank) AS lo, max(rank) AS hi
    FROM (SELECT run, rank, rank - row_number() OVER (PARTITION BY run ORDER BY rank) AS island
          FROM (SELECT DISTINCT run, rank FROM traces WHERE rank IS NOT NULL))
    GROUP BY run, island
),
rank_lists AS (
    SELECT run, string_agg(CASE WHEN lo = hi THEN lo::VARCHAR ELSE lo::VARCHAR || '-' || hi::VARCHAR END,
                           ',' ORDER BY lo) AS ranks
    FROM islands
    GROUP BY run
),
tag_maps AS (
    SELECT run, map_from_entries(list((key, value) ORDER BY key)) AS tags
    FROM run_tags
    GROUP BY run
),
per_run AS (
    SELECT t.run, count(*) AS traces,
           max(try_cast(json_extract_string(t.metadata, '$.distributedInfo.world_size') AS INTEGER)) AS world_size,
           -- NULL (unknown) when a trace of the run has no facts yet
           CASE WHEN count(f.trace_id) = count(*) THEN sum(f.devices) END::BIGINT AS devices,
           max(f.steps)::BIGINT AS steps,
           sum(f.step_total_ns) / nullif(sum(f.steps), 0) / 1e3 AS step_mean_us,
           100.0 * sum(f.busy_ns) / nullif(sum(f.window_ns), 0) AS busy_pct,
           sum(t.event_count)::BIGINT AS events, sum(t.json_bytes)::BIGINT AS json_bytes,
           min(t.loaded_at) AS first_loaded_at, max(t.loaded_at) AS last_loaded_at
    FROM traces t
    LEFT JOIN trace_facts f USING (trace_id)
    GROUP BY t.run
)
SELECT p.run, p.traces, r.ranks, p.world_size, p.devices, p.steps, p.step_mean_us, p.busy_pct,
       coalesce(g.tags, MAP {}::MAP(VARCHAR, VARCHAR)) AS tags,
       p.events, p.json_bytes, p.first_loaded_at, p.last_loaded_at
FROM per_run p
LEFT JOIN rank_lists r USING (run)
LEFT JOIN tag_maps g USING (run);
