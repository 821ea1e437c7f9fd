"""Ctrl-C and SIGTERM.

Python raises KeyboardInterrupt for Ctrl-C; DuckDB, when the signal arrives
while it runs a statement, raises RuntimeError('Query interrupted') instead
(duckdb.InterruptException when a cursor is interrupted from another thread
and no signal is pending). `is_interrupt` recognises all three. DuckDB 2.0
sees the signal only when the statement ends: the CLI stops the statements
of the connections it watches itself (stop_statements_on_signal). The
CLI makes SIGTERM raise KeyboardInterrupt too (`terminate_as_interrupt`), so
a terminated load cleans up like an interrupted one: its transaction rolls
back, its temp files go. `deferred()` holds signals back for the few
statements that must not be cut in two: a COMMIT and recording that it
happened (so an interrupt can never make a committed load report failure).
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import weakref

import duckdb

_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# connections whose running statement a signal stops (watch), and whether a
# deferred() block is running (then it is not stopped: the signal comes later)
_watched: "weakref.WeakSet[duckdb.DuckDBPyConnection]" = weakref.WeakSet()
_lock = threading.Lock()
_deferred = 0
_installed = False
_wakeup: tuple = ()
# a signal the watcher saw and the CLI has not acted on yet (see check)
_unhandled = False
# how often the watcher interrupts the watched statements again meanwhile
REPEAT_SECONDS = 0.1


def is_interrupt(e: BaseException) -> bool:
    return (isinstance(e, (KeyboardInterrupt, duckdb.InterruptException))
            or (isinstance(e, RuntimeError) and str(e) == "Query interrupted"))


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def terminate_as_interrupt():
    """SIGTERM raises KeyboardInterrupt, and both signals stop the statement
    DuckDB is running (the CLI; in the main thread)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)
        stop_statements_on_signal()


def watch(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A signal stops the statement `con` runs (once stop_statements_on_signal
    is installed)."""
    _watched.add(con)
    return con


def _interrupt_watched():
    # (a function: the waiting thread keeps no connection alive between signals)
    for con in list(_watched):
        try:
            con.interrupt()
        except Exception:  # noqa: BLE001 - a closed connection: nothing runs
            pass


def stop_statements_on_signal():
    """DuckDB 2.0 notices Ctrl-C only when the statement it runs has ended
    (it then raises RuntimeError('Query interrupted')): a long join or a big
    insert ran on for minutes. Python's C-level handler writes each signal
    to a wakeup fd even while the main thread waits in DuckDB; a thread
    reading it interrupts the watched connections, whose statement then
    ends at once (again as RuntimeError('Query interrupted'), the Python
    handler having run). Not inside deferred(): the COMMIT is never cut."""
    global _installed, _wakeup
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    wanted = {int(s) for s in _SIGNALS}

    def stop():
        global _unhandled
        while True:
            try:
                got = reader.recv(64)
            except socket.timeout:  # a signal not acted on yet: interrupt again (see below)
                with _lock:
                    if not _unhandled:
                        reader.settimeout(None)
                    elif not _deferred:
                        _interrupt_watched()
                continue
            if not got:
                return
            if wanted.isdisjoint(got):
                continue
            with _lock:
                _unhandled = True
                if not _deferred:
                    _interrupt_watched()
            # an interrupt that lands between two statements, or that DuckDB
            # lets pass, stops nothing: until the CLI acts on the signal
            # (acknowledge), the statements it runs are interrupted again
            reader.settimeout(REPEAT_SECONDS)

    # A small stack, and no watcher at all when no thread can start (under a
    # tight `ulimit -v` a default 8 MB stack may not fit): signals are then
    # noticed when the statement ends, as DuckDB does by itself.
    old_size = threading.stack_size(256 << 10)
    try:
        threading.Thread(target=stop, name="duckprof-interrupts", daemon=True).start()
    except RuntimeError:
        reader.close(), writer.close()
        return
    finally:
        threading.stack_size(old_size)
    try:
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except ValueError:
        writer.close()  # the watcher sees the end of its socket and returns
        return
    _installed = True
    _wakeup = (reader, writer)  # kept open for the life of the process


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
    global _deferred
    got: list[int] = []
    for s in _SIGNALS:
        signal.signal(s, lambda signum, frame: got.append(signum))
    with _lock:
        _deferred += 1
    try:
        yield
    finally:
        with _lock:
            _deferred -= 1
        for s, h in old.items():
            signal.signal(s, h)
        if got:
            signal.raise_signal(got[0])  # now handled as usual


def check():
    """Raise KeyboardInterrupt for a signal the watcher saw that nothing has
    acted on. Called where the CLI goes on after a statement (a load's next
    phase, a report's rows before they are printed): DuckDB can consume the
    interrupt and finish the statement normally, KeyboardInterrupt included
    (the full test runs that seemed to show it, an interrupted load committed,
    an interrupted report printed its rows, had SIGINT ignored: started with
    `&` from a script; a guard kept all the same). Only in the main thread,
    outside deferred()."""
    global _unhandled
    if _unhandled and not _deferred and threading.current_thread() is threading.main_thread():
        _unhandled = False
        raise KeyboardInterrupt


def acknowledge():
    """The CLI acted on an interrupt (it is exiting with code 130)."""
    global _unhandled
    _unhandled = False
