"""Which recorded arguments of an op call it reads, writes, or both.

Kineto records an op's name without its overload (``aten::clamp_min`` also for
``clamp_min.out``) and every argument of the overload that ran, keyword-only
ones included, so an ``out=`` tensor is one more trailing tensor argument.
``duckprof/data/aten_schemas.json`` (made from torch's own schemas by
``fixtures/estimators/make_aten_schemas.py``) lists, for every aten op with an
overload that writes one of its arguments, each overload's argument kinds;
``roles`` matches a record against them.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

from .args import Args

READ, WRITE, READ_WRITE = "r", "w", "rw"
_ROLE = {"T": READ, "t": READ, "L": READ, "O": WRITE, "P": WRITE, "M": READ_WRITE, "N": READ_WRITE, "s": ""}
_LIST_TYPES = ("TensorList", "GenericList")


@functools.cache
def _schemas() -> dict:
    return json.loads(resources.files("duckprof").joinpath("data/aten_schemas.json").read_text(encoding="utf-8"))


def _fits(kinds: str, a: Args) -> bool:
    """Whether the recorded args can be a call of an overload with these argument kinds."""
    if len(kinds) != a.n():
        return False
    for i, k in enumerate(kinds):
        t = a.type(i)
        if k in "TOM":
            ok = a.is_tensor(i)
        elif k == "t":
            ok = a.is_tensor(i) or t == ""
        elif k in "LPN":
            ok = t in _LIST_TYPES or (k == "L" and t == "")
        else:
            ok = not a.is_tensor(i) and t not in ("TensorList",)
        if not ok:
            return False
    return True


def roles(name: str, a: Args) -> list[str]:
    """Per recorded argument: READ, WRITE (an out= tensor), READ_WRITE (an
    argument updated in place) or '' (not a tensor).

    The overload is the one the name gives ('aten::add.out'), else the
    overloads of the name whose argument kinds fit the record, those that
    write no out= tensor first (max(a, b) is max.other, not max(a, out=b)).
    An op that no schema fits: every tensor is read, and a name ending in one
    '_' (add_, relu_, _foreach_mul_: torch's in-place convention) updates its
    first argument in place.
    """
    base = name.strip()
    base = base[6:] if base.startswith("aten::") else base
    base, dot, overload = base.partition(".")
    known = _schemas().get(base, {})
    if dot and overload in known:
        candidates = [known[overload]]
    else:
        candidates = sorted(known.values(), key=lambda k: "O" in k or "P" in k)
    for kinds in candidates:
        if _fits(kinds, a):
            return [_ROLE[k] if (a.is_tensor(i) or a.type(i) in _LIST_TYPES) else "" for i, k in enumerate(kinds)]
    out = [READ if (a.is_tensor(i) or a.type(i) == "TensorList") else "" for i in range(a.n())]
    if out and out[0] and base.endswith("_") and not base.endswith("__"):
        out[0] = READ_WRITE
    return out
