"""One exception type for bad input: it names the file and says what is wrong, in one line."""


class TraceError(Exception):
    """A trace (or path) that cannot be loaded. The CLI prints str(e) and exits 2."""

    def __init__(self, path, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class DuckprofError(Exception):
    """A usage or database problem that is not about one trace file (exit code 2)."""
