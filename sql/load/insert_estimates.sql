-- Store the estimates computed for new operator signatures (op_signatures.sql)
-- in op_estimates: all rows in one statement, from one bound JSON parameter.
-- Parameter: data (VARCHAR), a JSON array of rows [sig, name, input_dims,
-- input_types, concrete_inputs, flops, bytes, dtype, flops_formula,
-- bytes_formula]; sig is written as a
-- string (a UBIGINT does not fit a JSON number, a double), flops and bytes as
-- integers or null.
INSERT INTO op_estimates (sig, name, input_dims, input_types, concrete_inputs, flops, bytes, dtype,
                          flops_formula, bytes_formula)
SELECT (r->>0)::UBIGINT, r->>1, r->>2, r->>3, r->>4, (r->>5)::BIGINT, (r->>6)::BIGINT, r->>7, r->>8, r->>9
FROM (SELECT unnest(CAST(CAST($data AS JSON) AS JSON[])) AS r)
