"""Estimates in DuckDB: computed once per distinct op signature and stored in
op_estimates at load (``add_estimates``), or as a table / UDFs on any
connection (``estimate_table``, ``register``).  Python runs once per distinct
signature (thousands even for huge traces), never per event."""
from __future__ import annotations

import json

from .. import sqlfiles
from .args import op_dtype
from .flops import flops_formula, op_flops
from .traffic import bytes_and_rule, op_bytes


def estimates(name, input_dims, input_types, concrete_inputs) -> list:
    """[flops, bytes, dtype, flops_formula, bytes_formula] of one op signature,
    as op_estimates stores them."""
    nbytes, rule = bytes_and_rule(name, input_dims, input_types, concrete_inputs)
    return [op_flops(name, input_dims, input_types, concrete_inputs), nbytes, op_dtype(input_dims, input_types),
            flops_formula(name, input_dims, input_types, concrete_inputs), rule]


def add_estimates(con, first_trace_id: int, last_trace_id: int) -> int:
    """Store FLOP/byte/dtype estimates for the op signatures of the traces
    first_trace_id..last_trace_id that op_estimates does not have yet
    (sql/load/op_signatures.sql, insert_estimates.sql); returns how many."""
    rows = con.execute(sqlfiles.render("load/op_signatures.sql"),
                       {"first_trace_id": first_trace_id, "last_trace_id": last_trace_id}).fetchall()
    if not rows:
        return 0
    data = [[str(sig), n, d, t, c, *estimates(n, d, t, c)] for sig, n, d, t, c in rows]
    con.execute(sqlfiles.read("load/insert_estimates.sql"), {"data": json.dumps(data)})
    return len(data)


def estimate_table(con, source_sql: str, table: str = "op_estimates") -> int:
    """Materialise estimates for the DISTINCT op signatures of ``source_sql``; no UDF needed.

    ``source_sql`` is a query (structure, not user values) returning columns
    ``name, input_dims, input_types, concrete_inputs`` (VARCHAR or JSON).  Creates
    (or replaces) ``table`` with those four columns as VARCHAR plus ``flops``
    BIGINT, ``bytes`` BIGINT, ``dtype``, ``flops_formula``, ``bytes_formula``
    VARCHAR (as in op_estimates), and returns its row count.  Join it
    back with ``IS NOT DISTINCT FROM`` on the four keys cast to VARCHAR.  Python runs
    once per distinct signature (thousands, not per event); the results go back
    in one statement as one bound JSON parameter.
    """
    rows = con.execute(
        f"SELECT DISTINCT CAST(name AS VARCHAR), CAST(input_dims AS VARCHAR), CAST(input_types AS VARCHAR),"
        f" CAST(concrete_inputs AS VARCHAR) FROM ({source_sql}) AS src"
    ).fetchall()
    data = [[n, d, t, c, *estimates(n, d, t, c)] for n, d, t, c in rows]
    con.execute(
        f"CREATE OR REPLACE TABLE {table} (name VARCHAR, input_dims VARCHAR, input_types VARCHAR,"
        f" concrete_inputs VARCHAR, flops BIGINT, bytes BIGINT, dtype VARCHAR, flops_formula VARCHAR,"
        f" bytes_formula VARCHAR)"
    )
    if data:
        con.execute(
            f"INSERT INTO {table} SELECT r->>0, r->>1, r->>2, r->>3, CAST(r->>4 AS BIGINT),"
            f" CAST(r->>5 AS BIGINT), r->>6, r->>7, r->>8 FROM (SELECT unnest(CAST(CAST(? AS JSON) AS JSON[])) AS r)",
            [json.dumps(data)],
        )
    return len(data)


def register(con) -> None:
    """Register the estimators as DuckDB scalar UDFs on connection ``con``.

    duckprof_flops(name, dims, types, concrete VARCHAR) -> BIGINT
    duckprof_bytes(name, dims, types, concrete VARCHAR) -> BIGINT
    duckprof_dtype(dims, types VARCHAR) -> VARCHAR

    Native (row-at-a-time) UDFs: they are meant for the DISTINCT op signatures
    of a load, not per event.  null_handling='special' so SQL NULLs (ops
    recorded without shapes) reach Python as None; the functions then return
    NULL themselves.  Deterministic: side_effects=False.  DuckDB's
    create_function requires numpy (even for native UDFs); without it this raises
    RuntimeError: use ``estimate_table`` then.
    """
    try:
        import numpy  # noqa: F401  (DuckDB's create_function imports it, even for native UDFs)
    except ImportError:
        raise RuntimeError(
            "duckprof.estimators.register() needs numpy: DuckDB's Python UDFs require it even in "
            "'native' mode. Install numpy, or use estimate_table(), which needs no UDF."
        ) from None
    from duckdb import sqltypes as _t  # duckdb >= 1.4; older: duckdb.typing

    varchar, bigint = _t.VARCHAR, _t.BIGINT
    kw = dict(type="native", null_handling="special", side_effects=False)
    con.create_function("duckprof_flops", lambda n, d, t, c: op_flops(n, d, t, c),
                        [varchar] * 4, bigint, **kw)
    con.create_function("duckprof_bytes", lambda n, d, t, c: op_bytes(n, d, t, c),
                        [varchar] * 4, bigint, **kw)
    con.create_function("duckprof_dtype", lambda d, t: op_dtype(d, t), [varchar] * 2, varchar, **kw)
