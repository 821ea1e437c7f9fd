-- runs: one row per run label in the database.
-- run           VARCHAR  label given at load (--run)
-- traces        BIGINT   trace files in the run
-- ranks         VARCHAR  the ranks, comma separated
-- events        BIGINT   events in the run
-- json_bytes    BIGINT   uncompressed JSON loaded
-- first_loaded_at, last_loaded_at  TIMESTAMP
CREATE OR REPLACE VIEW runs AS
SELECT run, count(*) AS traces,
       string_agg(DISTINCT rank::VARCHAR, ',' ORDER BY rank::VARCHAR) AS ranks,
       sum(event_count) AS events, sum(json_bytes) AS json_bytes,
       min(loaded_at) AS first_loaded_at, max(loaded_at) AS last_loaded_at
FROM traces
GROUP BY run;
