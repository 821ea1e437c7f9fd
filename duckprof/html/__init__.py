"""`duckprof html`: one self-contained HTML page of a run or a diff (page.py)."""

from .page import SECTIONS, Page, Section, build
from .diff_page import DIFF_SECTIONS, build_diff

__all__ = ["build", "build_diff", "Page", "Section", "SECTIONS", "DIFF_SECTIONS"]
