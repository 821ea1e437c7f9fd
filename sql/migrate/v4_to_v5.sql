-- Schema version 4 -> 5: report_results is new (the stored results of the
-- reports a `duckprof html` page shows; see sql/schema.sql). Empty: the first
-- page of each run fills it. Run by duckprof.session in one transaction.
CREATE TABLE IF NOT EXISTS report_results (
    run VARCHAR, inputs_key VARCHAR, report VARCHAR, options VARCHAR, columns VARCHAR[], rows_json VARCHAR,
    notes VARCHAR[], instead VARCHAR[], stored_at TIMESTAMP);
