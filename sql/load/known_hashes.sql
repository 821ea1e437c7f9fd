-- The content hashes of the traces already loaded into one run: a file whose
-- hash is among them is not loaded again (reloading is a no-op).
-- Parameter: run (VARCHAR).
-- content_hash  VARCHAR  traces.content_hash (sha256 hex; blake2b-128 in runs
--                        loaded by older duckprof versions)
SELECT content_hash FROM traces WHERE run = $run
