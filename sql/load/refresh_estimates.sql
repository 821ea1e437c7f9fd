-- Recompute the stored estimates of every operator signature in op_estimates
-- (duckprof.session.refresh_stored runs it in a write transaction when the
-- estimator code differs from the code that computed them, so old and new
-- numbers never mix): all rows in one statement, from one bound JSON
-- parameter. Parameter: data (VARCHAR), a JSON array of rows [sig, flops,
-- bytes, dtype, flops_formula, bytes_formula]; sig as a string (a UBIGINT
-- does not fit a JSON number).
UPDATE op_estimates AS o
SET flops = (n.r->>1)::BIGINT, bytes = (n.r->>2)::BIGINT, dtype = n.r->>3,
    flops_formula = n.r->>4, bytes_formula = n.r->>5
FROM (SELECT unnest(CAST(CAST($data AS JSON) AS JSON[])) AS r) AS n
WHERE o.sig = (n.r->>0)::UBIGINT
