-- Schema version 2 -> 3: what was added after version 2 was released.
-- op_estimates gains the names of the estimators behind its numbers (NULL for
-- the signatures estimated before; the session recomputes the estimates when
-- its estimator code differs); the tables interconnect_peaks, run_tags and
-- trace_facts are new (the session seeds the first and fills the last after
-- the step). Run by duckprof.session in one transaction, with the old views
-- dropped first.
ALTER TABLE op_estimates ADD COLUMN IF NOT EXISTS flops_formula VARCHAR;
ALTER TABLE op_estimates ADD COLUMN IF NOT EXISTS bytes_formula VARCHAR;
CREATE TABLE IF NOT EXISTS interconnect_peaks (
    device VARCHAR, interconnect VARCHAR, gbps DOUBLE, source VARCHAR);
CREATE TABLE IF NOT EXISTS run_tags (
    run VARCHAR NOT NULL, key VARCHAR NOT NULL, value VARCHAR NOT NULL, set_at TIMESTAMP, PRIMARY KEY (run, key));
CREATE TABLE IF NOT EXISTS trace_facts (
    trace_id INTEGER, devices INTEGER, steps BIGINT, step_total_ns BIGINT, step_max_ns BIGINT,
    busy_ns BIGINT, window_ns BIGINT);
