"""`duckprof html`: one self-contained HTML page of a run or a diff (page.py)."""

import importlib

__all__ = ["build", "build_diff", "prepare", "Page", "Section", "SECTIONS", "DIFF_SECTIONS"]
_FROM = {"build": "page", "prepare": "page", "Page": "page", "Section": "page", "SECTIONS": "page",
         "build_diff": "diff_page", "DIFF_SECTIONS": "diff_page"}


def __getattr__(name):
    # imported on first use: every CLI command imports html.cli to register `html`
    if name in _FROM:
        return getattr(importlib.import_module(f".{_FROM[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
