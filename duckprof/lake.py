"""Parquet lake (placeholder)."""
import os

MARKER = "_duckprof_lake.json"


def _path_list(paths):
    return [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)


def is_lake(paths) -> bool:
    ps = _path_list(paths)
    return len(ps) == 1 and os.path.isfile(os.path.join(os.fspath(ps[0]), MARKER))
