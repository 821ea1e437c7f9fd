"""`python -m duckprof` runs the CLI (report modules register on duckprof.cli)."""

from duckprof.cli import main

main()
