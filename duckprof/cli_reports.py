"""Registers the `duckprof report ...` (and diff/augment) commands: one import per report module."""

import importlib

# Each module defines its typer command(s) on cli.app / cli.report_app.
REPORT_MODULES = ["diff", "report_kernels", "report_gpu", "augment"]

for _name in REPORT_MODULES:
    importlib.import_module(f"duckprof.{_name}")
