-- The staged table of a group of small traces (load._Group), empty: each of
-- its parts (stage_events.sql, grouped) adds its rows to it, two parts maybe
-- at once (each on its own cursor), so that the batch made of the group reads
-- one table: DuckDB inserts what one table scan gives in full row groups
-- (each thread's share of it), where a relation of several tables under
-- UNION ALL is inserted table by table, and each thread's share of a table
-- of fewer than 2 x 122,880 rows is appended once more, row by row
-- (benchmarks/README.md, branch ranks12).
-- Template: raw = the table's qualified name.
-- Columns: those of stage_events.sql, grouped.
CREATE OR REPLACE TABLE {{ raw }} (pos BIGINT, ph VARCHAR, cat VARCHAR, name VARCHAR, pid VARCHAR, tid VARCHAR,
                                   ts DOUBLE, dur DOUBLE, id VARCHAR, args JSON, args_long JSON)
