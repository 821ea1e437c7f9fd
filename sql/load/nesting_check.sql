-- Threads whose nesting needs the crossing pass of nesting.sql: those where
-- the first pass marked an event (depth -1) because its parent is itself or
-- does not contain it (see nesting.sql). Template: nest (the batch's nesting
-- table). Returns thread (UBIGINT), none for properly nested traces.
SELECT DISTINCT thread FROM {{ nest }} WHERE depth < 0
