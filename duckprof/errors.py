"""One exception type for bad input: it names the file and says what is wrong, in one line."""


class TraceError(Exception):
    """A trace (or path) that cannot be loaded. The CLI prints str(e) and exits 2."""

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
