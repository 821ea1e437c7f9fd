-- trace_files: one row per loaded trace file: what reports need to know about
-- a trace (its run, its rank, its file) without reading the traces table.
--
-- requires: traces
--
-- Columns:
-- trace_id        INTEGER    id used by every table and view
-- run             VARCHAR    run label (a run groups the ranks of one job)
-- rank            INTEGER    distributedInfo.rank, else from the file name, else NULL
-- world_size      INTEGER    distributedInfo.world_size: ranks in the job (NULL: not recorded)
-- path            VARCHAR    absolute path at load time
-- file_name       VARCHAR    the file's name without its directory
-- json_bytes      BIGINT     uncompressed JSON size
-- event_count     BIGINT     events in the trace
-- loaded_at       TIMESTAMP  when it was loaded (UTC)
-- schema_version  VARCHAR    the trace's own schemaVersion
-- first_ts_ns     BIGINT     earliest start of a complete event (ph X, dur >= 0), ns since the epoch
-- last_end_ns     BIGINT     latest end of a complete event, ns since the epoch
-- wall_ns         BIGINT     last_end_ns - first_ts_ns: the profiled window
-- pg_sizes        INTEGER[]  distributedInfo.pg_config: ranks in each process group (NULL: not recorded)
CREATE OR REPLACE VIEW trace_files AS
SELECT trace_id, run, rank,
       try_cast(json_extract_string(metadata, '$.distributedInfo.world_size') AS INTEGER) AS world_size, path, regexp_extract(path, '[^/\\]*$') AS file_name, json_bytes, event_count,
       loaded_at, schema_version, first_ts_ns, last_end_ns, last_end_ns - first_ts_ns AS wall_ns,
       try_cast(json_extract(metadata, '$.distributedInfo.pg_config[*].pg_size') AS INTEGER[]) AS pg_sizes
FROM traces;
