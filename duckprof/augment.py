"""`duckprof augment IN OUT`: write FLOP and byte estimates into a trace.

Adds ``kernel_flop`` (FLOPs, an integer) and ``kernel_num_gb`` (bytes / 1e9)
to the ``args`` of every GPU kernel with an estimate and of the cpu_op that
launched it -- the field names and units of torch's
``profile_analysis --augment_trace``, so tools that read those fields (that
one included) see them. Everything else in the file is kept byte for byte.

Differences from torch's tool, on purpose:

* a kernel gets its share of the op's estimate (the kernel_estimates view:
  split by duration when an op launches several kernels), not the op's full
  count once per kernel; the op gets its full count;
* a value that is unknown (no shapes, no formula) is left out, not written
  as 0.

How: the trace is loaded into a temporary duckprof database (DuckDB computes
the estimates; events.event_id is the event's 1-based position in
traceEvents), then the file is streamed once more and only the matched
events are rewritten. Events are found by the byte pattern between two
events (``}`` ``,`` ``{``); each rewritten event is checked against the
database (its name), and at the end the number of events must equal the
number loaded, so a nested ``}, {`` inside some args cannot shift the
numbering unnoticed: if it happens, the file is streamed again with an exact
(JSON-decoding) scanner. Memory stays flat: blocks of 8 MB, the temporary
database on disk, targets fetched in batches.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass


from .errors import DuckprofError, TraceError
from .session import Session
from .jsonscan import EVENT_BOUNDARY, WS, read_head, value_length

try:  # ISA-L gzip: ~3x faster both ways; optional
    from isal import igzip as _gzip
except ImportError:  # pragma: no cover
    import gzip as _gzip

BLOCK = 8 << 20
_ARGS = re.compile(rb'"args"\s*:\s*\{')
_CLOSE = re.compile(rb"\s*\]")


class _Misaligned(Exception):
    """The fast scanner's event numbering disagrees with the database."""


@dataclass
class AugmentReport:
    src: str
    dst: str
    events: int = 0
    kernels: int = 0          # kernel events written
    ops: int = 0              # cpu_op events written
    kernels_unknown: int = 0  # kernels with no estimate (left as they were)
    exact_scan: bool = False  # the fast scanner was not enough
    seconds: float = 0.0

    def summary(self) -> str:
        s = (f"wrote {self.dst}: kernel_flop/kernel_num_gb on {self.kernels:,} kernel(s) and "
             f"{self.ops:,} op(s); {self.kernels_unknown:,} kernel(s) without an estimate left as they were")
        if self.exact_scan:
            s += " (exact scan)"
        return s + f" in {self.seconds:.1f} s"


# --------------------------------------------------------------------------- estimates

def _targets_sql() -> str:
    """event_id, name, flops, bytes of every event to rewrite, in file order."""
    return """
        SELECT event_id, name, flops, bytes FROM kernel_estimates
        WHERE trace_id = $t AND (flops IS NOT NULL OR bytes IS NOT NULL)
        UNION ALL
        SELECT op_event_id, any_value(op_name), any_value(op_flops), any_value(op_bytes)
        FROM kernel_estimates
        WHERE trace_id = $t AND op_event_id IS NOT NULL AND (op_flops IS NOT NULL OR op_bytes IS NOT NULL)
        GROUP BY op_event_id
        ORDER BY 1"""


def _iter_targets(con, trace_id, batch=20000):
    cur = con.cursor()
    cur.execute(_targets_sql(), {"t": trace_id})
    while True:
        rows = cur.fetchmany(batch)
        if not rows:
            break
        yield from rows
    cur.close()


def _fields(flops, nbytes) -> bytes:
    parts = []
    if flops is not None:
        parts.append(b'"kernel_flop": %d' % flops)
    if nbytes is not None:
        parts.append(b'"kernel_num_gb": ' + repr(nbytes / 1e9).encode())
    return b", ".join(parts)


def _patch(ev: bytes, name: str, flops, nbytes) -> bytes:
    """The event with kernel_flop / kernel_num_gb added to its args.

    Fast path: insert the fields right after `"args": {` (the rest of the
    event stays byte for byte). Anything unusual (no or several "args", the
    fields already there, a name we cannot find verbatim) goes through
    json.loads, which also checks that this is the event the database meant.
    """
    fields = _fields(flops, nbytes)
    if (b'"kernel_flop"' not in ev and b'"kernel_num_gb"' not in ev and ev.count(b'"args"') == 1
            and json.dumps(name, ensure_ascii=False).encode("utf-8") in ev):
        m = _ARGS.search(ev)
        if m:
            rest = ev[m.end():]
            sep = b"" if rest.lstrip(WS)[:1] == b"}" else b", "
            return ev[:m.end()] + fields + sep + rest
    try:
        obj = json.loads(ev)
    except ValueError:
        raise _Misaligned("not one JSON event") from None
    if not isinstance(obj, dict) or obj.get("name") != name:
        raise _Misaligned(f"expected {name!r}")
    args = obj.get("args")
    if not isinstance(args, dict):
        args = obj["args"] = {}
    if flops is not None:
        args["kernel_flop"] = flops
    if nbytes is not None:
        args["kernel_num_gb"] = nbytes / 1e9
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


# --------------------------------------------------------------------------- streaming

def _open_in(path):
    f = open(path, "rb")
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        return _gzip.GzipFile(fileobj=f, mode="rb"), f
    return f, f


def _open_out(path):
    raw = open(path, "wb")
    if path.endswith(".gz"):
        return _gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3 if _gzip.__name__.endswith("igzip") else 6,
                              mtime=0), raw
    return raw, raw


def _blocks(stream):
    while True:
        b = stream.read(BLOCK)
        if not b:
            return
        yield b


def _head(path, it):
    """(prefix bytes up to and including '[', the rest of the first blocks)."""
    found, head = read_head(path, it)
    if not found:
        raise TraceError(path, "not a trace: no 'traceEvents' array")
    return head[:found[1]], head[found[1]:]


def _rewrite_fast(path, out, targets, n_events):
    """Boundary-pattern scanner; raises _Misaligned when the numbering is off."""
    stream, raw = _open_in(path)
    try:
        it = _blocks(stream)
        prefix, data = _head(path, it)
        out.write(prefix)
        tgt = next(targets, None)
        idx = 0          # 1-based index of the event starting at ev_start
        ev_start = None  # offset of the current event's '{' in data (None: before the first)
        while True:
            if ev_start is None:
                s = data.lstrip(WS)
                if s[:1] == b"{":
                    ev_start, idx = len(data) - len(s), 1
                elif s:  # ']' right away: no events
                    break
            if ev_start is not None:
                flushed, pieces = 0, []
                for m in EVENT_BOUNDARY.finditer(data, ev_start):
                    if tgt is not None and tgt[0] == idx:
                        ev_end = m.start() + 1
                        pieces.append(data[flushed:ev_start])
                        pieces.append(_patch(data[ev_start:ev_end], tgt[1], tgt[2], tgt[3]))
                        flushed = ev_end
                        tgt = next(targets, None)
                    idx += 1
                    ev_start = m.end() - 1
                pieces.append(data[flushed:ev_start])
                out.write(b"".join(pieces))
                data = data[ev_start:]
                ev_start = 0
            nxt = next(it, None)
            if nxt is None:
                break
            data += nxt
        if ev_start is None:  # no events at all
            if n_events:
                raise _Misaligned("no events found")
            out.write(data)
            for b in it:
                out.write(b)
            return
        # data: the last event, ']' and the rest of the file
        if idx != n_events:
            raise _Misaligned(f"found {idx} events, the database has {n_events}")
        try:
            end = value_length(data)
        except ValueError:
            raise _Misaligned("the last event is not one JSON value") from None
        if not _CLOSE.match(data, end):
            raise _Misaligned("no ']' after the last event")
        if tgt is not None and tgt[0] == idx:
            out.write(_patch(data[:end], tgt[1], tgt[2], tgt[3]))
            out.write(data[end:])
            tgt = next(targets, None)
        else:
            out.write(data)
        if tgt is not None:
            raise _Misaligned(f"event {tgt[0]} not reached")
    finally:
        stream.close()
        raw.close()


def _rewrite_exact(path, out, targets, n_events):
    """JSON-decoding scanner (json.JSONDecoder.raw_decode per event): exact for
    any valid trace, but it parses every event, so it is only the fallback."""
    stream, raw = _open_in(path)
    dec = json.JSONDecoder()

    def enc(s):
        return s.encode("utf-8", "surrogateescape")

    try:
        it = _blocks(stream)
        prefix, first = _head(path, it)
        out.write(prefix)
        decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
        buf, pos, eof, idx = decoder.decode(first), 0, False, 0
        tgt = next(targets, None)

        def more():
            nonlocal buf, pos, eof
            nxt = next(it, None)
            if nxt is None:
                eof = True
                buf = buf[pos:] + decoder.decode(b"", final=True)
            else:
                buf = buf[pos:] + decoder.decode(nxt)
            pos = 0

        while True:
            i = pos
            while i < len(buf) and buf[i] in " \t\r\n,":
                i += 1
            if i == len(buf):
                if eof:
                    raise TraceError(path, "truncated inside traceEvents")
                out.write(enc(buf[pos:i]))
                pos = i
                more()
                continue
            if buf[i] == "]":
                break
            try:
                _obj, end = dec.raw_decode(buf, i)
            except ValueError:
                if eof:
                    raise TraceError(path, "not valid JSON inside traceEvents") from None
                out.write(enc(buf[pos:i]))
                pos = i
                more()
                continue
            out.write(enc(buf[pos:i]))
            idx += 1
            if tgt is not None and tgt[0] == idx:
                out.write(_patch(enc(buf[i:end]), tgt[1], tgt[2], tgt[3]))
                tgt = next(targets, None)
            else:
                out.write(enc(buf[i:end]))
            pos = end
        out.write(enc(buf[pos:]))
        for b in it:
            out.write(enc(decoder.decode(b)))
        out.write(enc(decoder.decode(b"", final=True)))
        if idx != n_events:
            raise DuckprofError(f"{path}: found {idx} events while rewriting, the database loaded {n_events}")
        if tgt is not None:
            raise DuckprofError(f"{path}: event {tgt[0]} not found while rewriting")
    finally:
        stream.close()
        raw.close()


# --------------------------------------------------------------------------- API

def augment(src, dst, progress=None, tmpdir=None) -> AugmentReport:
    """Write `src` to `dst` (gzip when dst ends in .gz) with kernel_flop and
    kernel_num_gb in the args of kernels and their ops. Atomic: dst appears
    only when complete."""
    t0 = time.perf_counter()
    src, dst = os.fspath(src), os.fspath(dst)
    if not os.path.isfile(src):
        raise TraceError(src, "no such file")
    out_dir = os.path.dirname(os.path.abspath(dst))
    if not os.path.isdir(out_dir):
        raise DuckprofError(f"{dst}: cannot write: no directory {os.path.dirname(dst) or out_dir}")
    if os.path.isdir(dst):
        raise DuckprofError(f"{dst}: cannot write: it is a directory")
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise DuckprofError(f"{dst}: cannot write: permission denied")
    rep = AugmentReport(src=src, dst=dst)
    work = tempfile.mkdtemp(prefix="duckprof-augment-", dir=tmpdir)
    tmp_out = None
    try:
        with Session(os.path.join(work, "augment.duckdb")) as s:
            s.con.execute("SET enable_progress_bar = false")  # our own progress line instead
            s.load([src], run="augment", progress=progress)
            row = s.con.execute("SELECT trace_id, event_count FROM traces").fetchall()[0]
            trace_id, n_events = row
            rep.events = n_events
            stats = s.con.execute("""
                SELECT count(*) FILTER (WHERE flops IS NOT NULL OR bytes IS NOT NULL),
                       count(*) FILTER (WHERE flops IS NULL AND bytes IS NULL),
                       count(DISTINCT op_event_id) FILTER (WHERE op_flops IS NOT NULL OR op_bytes IS NOT NULL)
                FROM kernel_estimates WHERE trace_id = $t""", {"t": trace_id}).fetchall()[0]
            rep.kernels, rep.kernels_unknown, rep.ops = stats
            try:  # the temp file is ours: an error names the user's path
                fd, tmp_out = tempfile.mkstemp(prefix=".augment-", suffix=".gz" if dst.endswith(".gz") else ".json",
                                               dir=out_dir)
                os.close(fd)
            except OSError as e:
                raise DuckprofError(f"{dst}: cannot write: {e.strerror or e}") from None
            for exact in (False, True):
                if progress:
                    progress(f"writing {dst}" + (" (exact scan)" if exact else ""))
                out, raw = _open_out(tmp_out)
                try:
                    targets = _iter_targets(s.con, trace_id)
                    if exact:
                        _rewrite_exact(src, out, targets, n_events)
                    else:
                        _rewrite_fast(src, out, targets, n_events)
                    out.close()
                    raw.close()
                    rep.exact_scan = exact
                    break
                except _Misaligned as e:
                    out.close()
                    raw.close()
                    if exact:  # the database's event numbering is not the file's order
                        raise DuckprofError(f"{src}: cannot match the loaded events to the file ({e}); "
                                            "events.event_id must be the position in traceEvents") from None
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_out, 0o666 & ~umask)  # mkstemp made it 0600; a new file gets the usual mode
        try:
            os.replace(tmp_out, dst)
        except OSError as e:
            raise DuckprofError(f"{dst}: cannot write: {e.strerror or e}") from None
        tmp_out = None
    finally:
        if tmp_out and os.path.exists(tmp_out):
            os.remove(tmp_out)
        shutil.rmtree(work, ignore_errors=True)
    rep.seconds = time.perf_counter() - t0
    return rep
