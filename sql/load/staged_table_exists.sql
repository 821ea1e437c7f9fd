-- Whether a table exists in the staging database (e.g. the exact timestamps
-- exact_ts.sql wrote for a chunk). Parameters: db (the staging database's
-- name), name (the table's name, unqualified). Returns one row or none.
SELECT 1 AS found FROM duckdb_tables() WHERE database_name = $db AND table_name = $name
