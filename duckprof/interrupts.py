"""Ctrl-C and SIGTERM.

Python raises KeyboardInterrupt for Ctrl-C; DuckDB, when the signal arrives
while it runs a statement, stops it and raises RuntimeError('Query
interrupted') instead (duckdb.InterruptException when a cursor is
interrupted from another thread). `is_interrupt` recognises all three. The
CLI makes SIGTERM raise KeyboardInterrupt too (`terminate_as_interrupt`), so
a terminated load cleans up like an interrupted one: its transaction rolls
back, its temp files go. `deferred()` holds signals back for the few
statements that must not be cut in two: a COMMIT and recording that it
happened (so an interrupt can never make a committed load report failure).
"""

from __future__ import annotations

import contextlib
import signal
import threading

import duckdb

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def is_interrupt(e: BaseException) -> bool:
    return (isinstance(e, (KeyboardInterrupt, duckdb.InterruptException))
            or (isinstance(e, RuntimeError) and str(e) == "Query interrupted"))


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def terminate_as_interrupt():
    """SIGTERM raises KeyboardInterrupt (the CLI; in the main thread)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)


@contextlib.contextmanager
def deferred():
    """SIGINT and SIGTERM arriving inside are delivered when it ends (only
    in the main thread, where Python runs signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in _SIGNALS}
    if any(h is None for h in old.values()):  # a handler set outside Python: leave it alone
        yield
        return
    got: list[int] = []
    for s in _SIGNALS:
        signal.signal(s, lambda signum, frame: got.append(signum))
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            signal.raise_signal(got[0])  # now handled as usual
