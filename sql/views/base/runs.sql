-- runs: one row per run label in the database.
--
-- requires: traces
--
-- Columns:
-- run              VARCHAR    label given at load (--run)
-- traces           BIGINT     trace files in the run
-- ranks            VARCHAR    the ranks in numeric order, consecutive ones as a range
--                             ('0-7', '0,2,4-6'); NULL when no trace has a rank
-- events           BIGINT     events in the run
-- json_bytes       BIGINT     uncompressed JSON loaded
-- first_loaded_at  TIMESTAMP  when its first trace was loaded (UTC)
-- last_loaded_at   TIMESTAMP  when its last trace was loaded (UTC)
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
)
SELECT t.run, count(*) AS traces, any_value(r.ranks) AS ranks,
       sum(t.event_count)::BIGINT AS events, sum(t.json_bytes)::BIGINT AS json_bytes,
       min(t.loaded_at) AS first_loaded_at, max(t.loaded_at) AS last_loaded_at
FROM traces t
LEFT JOIN rank_lists r USING (run)
GROUP BY t.run;
