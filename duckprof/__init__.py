"""duckprof: PyTorch profiler (Kineto) traces in DuckDB, answered with SQL."""

from .errors import DuckprofError, TraceError
from .session import SCHEMA_VERSION, Session, connect

__version__ = "0.1.0"
__all__ = ["connect", "Session", "TraceError", "DuckprofError", "SCHEMA_VERSION", "__version__"]
