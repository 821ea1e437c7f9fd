"""The exceptions a user can cause: each names the file (or database) and says
what is wrong and what to do, in one line (DuckDB's own hints may follow on
indented lines). The CLI prints str(e) and exits with `exit_code`."""


class TraceError(Exception):
    """A trace (or path) that cannot be loaded. The CLI prints str(e) and exits 2."""

    exit_code = 2

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class NotATraceError(TraceError):
    """Complete JSON that is no trace at all: an object without a traceEvents
    array (a config file, metrics). A load of a directory or a pattern skips
    such files; a file named on its own is still an error."""


class DuckprofError(Exception):
    """A usage or database problem that is not about one trace file (exit code 2)."""

    exit_code = 2


class DatabaseLocked(DuckprofError):
    """Another process holds the database file's lock (DuckDB allows one
    writing process, or any number of reading ones)."""


class Interrupted(DuckprofError):
    """Ctrl-C or SIGTERM: the message says what was kept (exit code 130, as a
    shell reports a command ended by SIGINT)."""

    exit_code = 130
