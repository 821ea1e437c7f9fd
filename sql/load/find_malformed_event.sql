-- Diagnosis only, when parsing a trace failed because an event ran on past
-- maximum_object_size (a bracket, comma or quote missing or extra somewhere):
-- read the traceEvents array of one chunk again with a limit as large as the
-- chunk, so DuckDB reports the event and byte where the JSON breaks
-- ("Malformed JSON at byte B in record/value N"). Parameters: files
-- (VARCHAR[], one chunk), max_bytes (BIGINT). Returns n BIGINT (events) when
-- the chunk parses after all.
SELECT count(*) AS n FROM read_json_objects($files, format = 'array', maximum_object_size = $max_bytes)
