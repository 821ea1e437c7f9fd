-- Before nesting.sql's crossing pass: delete the first pass's rows of the
-- threads it redoes. Template: nest. Parameter: threads (UBIGINT[], from
-- nesting_check.sql).
DELETE FROM {{ nest }} WHERE list_contains(CAST($threads AS UBIGINT[]), thread)
