"""Cut a Kineto trace file into JSON-array chunk files that DuckDB reads in parallel.

A trace is one JSON object whose `traceEvents` array holds almost all bytes
(or, rarely, a bare array of events). DuckDB parses one file on one thread and
parses a whole-object file far slower and with far more memory than a plain
array, so we stream the file once (decompressing .gz on the way), copy the
array's bytes into a few chunk files cut at event boundaries, and parse only
the small remainder (the top-level metadata) with Python's json module.

Event boundaries are found with a byte pattern (`}` `,` `{`), not a parser; a
cut in the wrong place makes DuckDB fail, and the loader then retries with a
single chunk, so a wrong guess costs time, never correctness. The byte-level
JSON scanning (where the array starts and ends, the metadata, why a file is
no trace) is in jsonscan.py, which augment.py shares.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import os
import re
import threading
import zlib
from dataclasses import dataclass, field

from .errors import NotATraceError, TraceError
from .jsonscan import (EVENT_BOUNDARY, WS, find_array_end, find_array_start, is_one_value, json_problem,
                       parse_metadata, read_head)

try:  # ISA-L decompresses gzip ~3x faster than zlib; optional.
    from isal import igzip as _gzip
    from isal.igzip_lib import IsalError as _IsalError  # not an OSError: corrupt deflate data
except ImportError:  # pragma: no cover - exercised only without isal
    _gzip = gzip
    _IsalError = zlib.error
_GZIP_ERRORS = (OSError, zlib.error, ValueError, _IsalError)

BLOCK = 8 << 20
TAIL_KEEP = 8 << 20  # bytes held back to find where the array ends
# Chunks are at least this big (~140k events, more than one DuckDB row group of
# 122,880 rows): each chunk's rows are inserted as their own row groups, so
# small chunks leave many partly filled ones, which a vacuuming checkpoint
# would spend time merging (the load's own checkpoint skips that merge, see
# Session.load, but the table stays more compact).
MIN_CHUNK = 48 << 20
_CTRL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_SPACES = bytes.maketrans(b"\t\r\n", b"   ")
# A \uD800-\uDFFF escape that is not half of a pair is invalid JSON to DuckDB
# (Python's json accepts it). Escaped backslashes are matched first so that
# "\\ud800" (a backslash, then the text ud800) is left alone.
_SURROGATE = re.compile(rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                        rb"|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")

# Content hash of a trace file (reload detection). sha256 runs faster than
# blake2b on CPUs with SHA extensions (which x86 and ARM servers have).
# Runs loaded by earlier duckprof versions hold blake2b-128 hashes (32 hex
# digits; sha256 has 64): the loader keeps hashing such a run with blake2b.
CONTENT_HASH = "sha256"
LEGACY_CONTENT_HASH = "blake2b"


def new_content_hash(name: str = CONTENT_HASH):
    if name == LEGACY_CONTENT_HASH:
        return hashlib.blake2b(digest_size=16)
    return hashlib.new(name)


@dataclass
class SplitTrace:
    path: str
    chunks: list[str]
    metadata: dict
    size_bytes: int
    json_bytes: int  # bytes of (uncompressed) JSON
    content_hash_value: object  # str, or a thread computing it (see content_hash)
    compressed: bool
    salvaged_bytes: int = 0  # bytes dropped from a truncated file
    salvaged_preview: str = ""
    salvaged: bool = False  # truncated, cut after its last complete event (--salvage)
    exact_salvage: bool = False  # ... found by the exact scan
    notes: list[str] = field(default_factory=list)
    sanitized: bool = False  # invalid UTF-8 / control characters were replaced
    spaces: bool = False
    # split with defer: the bytes of traceEvents' content (no chunk written),
    # for the caller to write where it wants (load._Grouper)
    events: object = None

    @property
    def content_hash(self) -> str:
        v = self.content_hash_value
        if isinstance(v, _FileHasher):
            v = self.content_hash_value = v.result()
        return v


class _HashingReader:
    """File wrapper that hashes the raw bytes as the decompressor pulls them."""

    def __init__(self, raw, hash_name):
        self.raw = raw
        self.hash = new_content_hash(hash_name)

    def read(self, n=-1):
        data = self.raw.read(n)
        self.hash.update(data)
        return data

    def readinto(self, buf):  # used by some gzip implementations
        n = self.raw.readinto(buf)
        self.hash.update(memoryview(buf)[:n])
        return n

    def readable(self):
        return True

    def close(self):
        pass


def _open_stream(path, hash_name):
    raw = open(path, "rb")
    magic = raw.read(2)
    raw.seek(0)
    hashing = _HashingReader(raw, hash_name)
    if magic == b"\x1f\x8b":
        return raw, hashing, _gzip.GzipFile(fileobj=hashing, mode="rb"), True
    return raw, hashing, hashing, False


class _FileHasher(threading.Thread):
    """Hashes a file in the background: hashlib and file reads release the GIL,
    so this overlaps with copying and with DuckDB's parse."""

    def __init__(self, path, hash_name):
        super().__init__(daemon=True)
        self.path, self.hash_name, self.digest, self.error = path, hash_name, None, None
        self.start()

    def run(self):
        try:
            h = new_content_hash(self.hash_name)
            with open(self.path, "rb", buffering=0) as f:
                while True:
                    b = f.read(BLOCK)
                    if not b:
                        break
                    h.update(b)
            self.digest = h.hexdigest()
        except (OSError, MemoryError) as e:  # file vanished mid-load; a process memory limit
            self.error = e

    def result(self) -> str:
        self.join()
        if isinstance(self.error, MemoryError):
            raise MemoryError("hashing the file") from None
        if self.error:
            raise TraceError(self.path, f"cannot read file ({self.error})")
        return self.digest


def _split_plain(path, tmpdir, stem, size, chunks, on_chunk, hash_name):
    """Fast path for an uncompressed, well-formed file: locate the array from
    its head and tail, cut at event boundaries near equal offsets, and copy the
    byte ranges in the kernel (copy_file_range). None means: use the streaming
    path (which also handles truncated and odd files)."""
    with open(path, "rb", buffering=0) as f:
        head = f.read(min(size, BLOCK))
        found = find_array_start(path, head)
        if not found:
            return None
        bare, start, prefix = found
        tail_off = max(start, size - TAIL_KEEP)
        f.seek(tail_off)
        tail = f.read()
        end, suffix = find_array_end(tail, bare)
        if end is None:
            return None
        stop = tail_off + end  # offset of the ']' closing traceEvents
        metadata = {} if bare else parse_metadata(path, prefix)
        metadata.update(suffix)
        cuts, length = [start], stop - start
        chunks = max(1, min(chunks, length // MIN_CHUNK))
        for k in range(1, chunks):
            off = start + k * length // chunks
            if off <= cuts[-1]:
                continue
            f.seek(off)
            m = EVENT_BOUNDARY.search(f.read(4 << 20))
            if m and off + m.end() - 1 < stop:
                cuts.append(off + m.start() + 1)  # chunk ends after '}'
                cuts.append(off + m.end() - 1)    # next chunk starts at '{'
        cuts.append(stop)
        hasher = _FileHasher(path, hash_name)
        paths = []
        src = f.fileno()
        for i in range(0, len(cuts), 2):
            a, b = cuts[i], cuts[i + 1]
            out = os.path.join(tmpdir, f"{stem}.{len(paths):04d}.json")
            paths.append(out)
            _copy_as_chunk(src, out, a, b)
            on_chunk(out)
    return SplitTrace(path=path, chunks=paths, metadata=metadata, size_bytes=size, json_bytes=size,
                      content_hash_value=hasher, compressed=False)


def _split_small(path, tmpdir, stem, size, on_chunk, hash_name, defer=False):
    """Fast path for an uncompressed, complete file of at most 2 * BLOCK (a
    rank of a big job: thousands of them): read once, hashed from the same
    bytes, the array located in them and written out as one chunk, without
    the copies of the streaming path. The result is the streaming path's.
    None means: use the streaming path (gzip, a truncated or odd file, which
    it handles and names)."""
    with open(path, "rb", buffering=0) as f:
        data = f.read(size + 1)
    if len(data) != size or data[:2] == b"\x1f\x8b":
        return None
    found = find_array_start(path, data)
    if not found:
        return None
    bare, start, prefix = found
    end, suffix = find_array_end(data, bare, start)
    if end is None:
        return None
    metadata = {} if bare else parse_metadata(path, prefix)
    metadata.update(suffix)
    digest = new_content_hash(hash_name)
    digest.update(data)
    events = memoryview(data)[start:end]
    if defer:
        return SplitTrace(path=path, chunks=[], metadata=metadata, size_bytes=size, json_bytes=size,
                          content_hash_value=digest.hexdigest(), compressed=False, events=events)
    out = os.path.join(tmpdir, f"{stem}.0000.json")
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for part in (b"[", events, b"]"):
            _write_all(fd, part)
    finally:
        os.close(fd)
    on_chunk(out)
    return SplitTrace(path=path, chunks=[out], metadata=metadata, size_bytes=size, json_bytes=size,
                      content_hash_value=digest.hexdigest(), compressed=False)


_NOT_WS = re.compile(rb"[^ \t\r\n]")


def _write_all(fd, data):
    data = memoryview(data)
    while data:
        data = data[os.write(fd, data):]


def _copy_all(src, dst, start, end):
    while start < end:
        n = _copy_range(src, dst, end - start, start)
        if n <= 0:
            raise OSError("short copy")
        start += n


def _copy_as_chunk(src, out, start, end):
    """Bytes [start, end) of the open file `src` (events) as the chunk file `out`: '[' events ']'."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        _write_all(fd, b"[")
        _copy_all(src, fd, start, end)
        _write_all(fd, b"]")
    finally:
        os.close(fd)


class JoinedChunk:
    """One chunk file holding the events of several small traces, `marker`
    (one JSON object) between the events of two of them, so that DuckDB reads
    one file instead of many (a multi-file read costs ~2 ms more a file).
    Traces are added in order, as the bytes of their traceEvents' content
    (add_events, from split_trace(defer=True)) or as a chunk file
    ('[' events ']', add_chunk). A trace without events adds nothing, no
    marker either: `segments` are the indices of the traces with events, one
    marker between every two. None of it is parsed: a damaged trace makes
    the file invalid JSON, or hides a marker, which the loader checks; it
    then takes each trace's bytes out again (extract)."""

    def __init__(self, path: str, marker: bytes):
        self.path, self.marker = path, marker
        self.ranges: list = []    # per trace added: (start, end) of its events in the file, None: none
        self.segments: list = []  # indices of the traces with events
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.pos = 0
        self._write(b"[")

    def _write(self, data):
        _write_all(self.fd, data)
        self.pos += len(data)

    def _start(self) -> int:
        if self.segments:
            self._write(b"," + self.marker + b",")
        self.segments.append(len(self.ranges))
        return self.pos

    def add_events(self, events):
        if not _NOT_WS.search(events):
            self.ranges.append(None)
            return
        start = self._start()
        self._write(events)
        self.ranges.append((start, self.pos))

    def add_chunk(self, chunk: str):
        with open(chunk, "rb", buffering=0) as f:
            src = f.fileno()
            size = os.fstat(src).st_size
            pos = 1
            while pos < size - 1 and not _NOT_WS.search(os.pread(src, 4096, pos)[:size - 1 - pos]):
                pos += 4096
            if pos >= size - 1:  # no events
                self.ranges.append(None)
                return
            start = self._start()
            _copy_all(src, self.fd, pos, size - 1)
            self.pos += size - 1 - pos
            self.ranges.append((start, self.pos))

    def close(self, complete: bool = True):
        """Close the file; complete: end the array first (not after an error,
        when the file is thrown away: writing could fail again, e.g. on a
        full disk, and hide the first error)."""
        if self.fd is not None:
            try:
                if complete:
                    self._write(b"]")
            finally:
                os.close(self.fd)
                self.fd = None

    def extract(self, k: int, out: str):
        """Trace k's events alone, as a chunk file `out`."""
        with open(self.path, "rb", buffering=0) as f:
            _copy_as_chunk(f.fileno(), out, *(self.ranges[k] or (0, 0)))


def _copy_range(src, dst, count, offset):
    try:
        return os.copy_file_range(src, dst, count, offset)
    except (AttributeError, OSError):  # not Linux, or a filesystem without it
        os.lseek(src, offset, os.SEEK_SET)
        data = os.read(src, min(count, BLOCK))
        return os.write(dst, data)


class _GzipRest:
    """What zlib can still decompress from a gzip file the gzip reader gave up
    on (EOFError), after the first `skip` uncompressed bytes (those the reader
    already returned). Iterating yields the bytes; afterwards `trailing` is the
    number of bytes after the last complete gzip member when the file is not
    truncated but has data appended to it (isal's reader reports that as an
    early end too), else 0."""

    def __init__(self, path, skip: int):
        self.path, self.skip, self.trailing = path, skip, 0

    def __iter__(self):
        skip = self.skip
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        with open(self.path, "rb") as f:
            pending = b""
            while True:
                c = pending or f.read(1 << 20)
                pending = b""
                if not c:
                    return
                try:
                    out = d.decompress(c)
                except zlib.error:
                    return
                if skip:
                    n = min(skip, len(out))
                    out, skip = out[n:], skip - n
                if out:
                    yield out
                if d.eof:
                    rest = d.unused_data + f.read()
                    if rest[:2] == b"\x1f\x8b":  # another member follows
                        d, pending = zlib.decompressobj(zlib.MAX_WBITS | 16), rest
                        continue
                    self.trailing = len(rest)
                    return


def _gzip_isize(path):
    """Uncompressed size from the gzip trailer (mod 2**32): an estimate for chunk sizing."""
    with open(path, "rb") as f:
        f.seek(-4, os.SEEK_END)
        return int.from_bytes(f.read(4), "little")



class _ChunkWriter:
    def __init__(self, tmpdir, stem, target, on_chunk):
        self.tmpdir, self.stem, self.target = tmpdir, stem, max(target, MIN_CHUNK)
        self.on_chunk = on_chunk
        self.paths: list[str] = []
        self.f = None
        self.size = 0
        self._open()

    def _open(self):
        p = os.path.join(self.tmpdir, f"{self.stem}.{len(self.paths):04d}.json")
        self.paths.append(p)
        self.f = open(p, "wb", buffering=0)
        self.f.write(b"[")
        self.size = 0

    def write(self, data: bytes):
        pos = 0
        while True:
            room = self.target - self.size
            m = EVENT_BOUNDARY.search(data, pos + max(room, 0)) if room < len(data) - pos else None
            if m is None:
                self.f.write(data[pos:] if pos else data)
                self.size += len(data) - pos
                return
            self.f.write(data[pos:m.start() + 1])
            self.f.write(b"]")
            self.f.close()
            self.on_chunk(self.paths[-1])
            self._open()
            pos = m.end() - 1

    def close(self):
        self.f.write(b"]")
        self.f.close()
        self.on_chunk(self.paths[-1])


_ESCAPE = re.compile(rb"\\.", re.S)
# a complete string, a bracket, or the quote that opens an unterminated string
_BRACKET_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]]|"')
_REST_OF_STRING = re.compile(rb'(?:[^"\\]|\\.)*"', re.S)


class _Nesting:
    """How deep the bytes fed so far leave the JSON, relative to inside the
    traceEvents array (0: between two events), for the exact --salvage cut:
    where a top-level event ends, not at a '}, {' inside one (a list of
    objects in args, or that text inside a name). Escapes are dropped (only
    strings hold them), then every other piece between quotes is string
    content; a string or an escape left open at the end of a block carries
    over to the next. C-speed bytes operations, no Python step per token."""

    def __init__(self):
        self.depth = 0
        self.in_string = False
        self.carry = b""  # a backslash that ended the last block

    def feed(self, data: bytes):
        if self.carry:
            data, self.carry = self.carry + data, b""
        if b"\\" in data:
            data = _ESCAPE.sub(b"", data)
            if data.endswith(b"\\"):
                data, self.carry = data[:-1], b"\\"
        pieces = data.split(b'"')
        # pieces alternate outside / inside a string, starting with the state we are in
        outside = pieces[1::2] if self.in_string else pieces[0::2]
        if len(pieces) % 2 == 0:  # an odd number of quotes flips the state
            self.in_string = not self.in_string
        text = b"".join(outside)
        self.depth += text.count(b"{") + text.count(b"[") - text.count(b"}") - text.count(b"]")

    def last_event_end(self, tail: bytes):
        """Offset in `tail` (the bytes after those fed) just past the last
        '}' that ends a top-level event, or None."""
        start = 0
        if self.in_string:  # skip to the end of the string the fed bytes left open
            m = _REST_OF_STRING.match(self.carry + tail)
            if m is None:
                return None
            start = m.end() - len(self.carry)
        elif self.carry:
            start = 1
        depth, last = self.depth, None
        for m in _BRACKET_TOKEN.finditer(tail, start):
            tok = m.group()
            if tok in (b"{", b"["):
                depth += 1
            elif tok in (b"}", b"]"):
                depth -= 1
                if depth == 0 and tok == b"}":
                    last = m.end()
                elif depth < 0:
                    break
            elif tok == b'"':  # the rest is a string the file ends in
                break
        return last


def _last_boundary_guess(held: bytes):
    """Where the last complete event of a truncated tail probably ends: after
    the last '}, {' (or at a final '}' when the tail is one complete value).
    A '}, {' inside an event makes the chunk invalid JSON, which DuckDB
    rejects; the loader then splits again with exact_salvage."""
    m = None
    for m in EVENT_BOUNDARY.finditer(held):
        pass
    stripped = held.rstrip(WS + b",")
    if m is None:
        # The held tail may also end right after a complete event.
        return len(stripped) if stripped.endswith(b"}") else None
    if stripped.endswith(b"}") and is_one_value(held[m.end() - 1:len(stripped)]):
        return len(stripped)
    return m.start() + 1


def split_trace(path: str, tmpdir: str, chunks: int = 4, salvage: bool = False,
                sanitize: bool = False, spaces: bool = False, on_chunk=None,
                hash_name: str = CONTENT_HASH, exact_salvage: bool = False, defer: bool = False) -> SplitTrace:
    """Stream `path` into chunk files under `tmpdir`; see the module docstring.

    on_chunk(path) is called as each chunk file is complete, in order (the
    loader starts parsing it while the rest is being split). A chunk reported
    before an error is raised is still on disk; the caller cleans up.

    sanitize: replace invalid UTF-8 with U+FFFD and escape raw control
    characters (a retry path, used only after DuckDB rejected the file);
    spaces: also turn raw tab/newline/CR into spaces (they are invalid inside
    JSON strings and harmless between tokens). hash_name: the content hash
    (CONTENT_HASH, or LEGACY_CONTENT_HASH for runs loaded with it).
    exact_salvage: cut a truncated file exactly where its last complete
    top-level event ends (_Nesting: scans every byte, so only on the retry
    after the quick guess made invalid JSON).
    defer: a small plain file (split from one read) is not written out: its
    traceEvents' content is returned as `events`, no chunk, no on_chunk (the
    loader writes it into a group's JoinedChunk); other files are split as
    without it.
    """
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise TraceError(path, f"cannot read file ({e.strerror})") from None
    if size == 0:
        raise TraceError(path, "empty file")
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.basename(path))[:60]
    on_chunk = on_chunk or (lambda chunk: None)
    if not sanitize and size > 2 * BLOCK:
        with open(path, "rb") as f:
            is_gzip = f.read(2) == b"\x1f\x8b"
        if not is_gzip:
            fast = _split_plain(path, tmpdir, stem, size, chunks, on_chunk, hash_name)
            if fast is not None:
                return fast
    elif not sanitize and size <= MIN_CHUNK:  # one chunk, as the stream would cut it
        small = _split_small(path, tmpdir, stem, size, on_chunk, hash_name, defer)
        if small is not None:
            return small
    raw, hashing, stream, compressed = _open_stream(path, hash_name)
    json_bytes = 0
    truncated_gzip = False
    trailing_bytes = 0  # data appended after the gzip stream (ignored, with a note)

    counts = {"utf8": 0, "ctrl": 0, "surrogate": 0}

    def lone_surrogate(m):
        if len(m.group()) != 6:  # an escaped backslash, or a pair
            return m.group()
        counts["surrogate"] += 1
        return b"\\ufffd"

    decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def clean(b: bytes) -> bytes:
        text = decoder.decode(b)
        counts["utf8"] += text.count("\ufffd") - b.count(b"\xef\xbf\xbd")
        b = text.encode("utf-8")
        b, n = _CTRL.subn(lambda m: b"\\u%04x" % m.group()[0], b)
        counts["ctrl"] += n
        if b"\\u" in b:
            b = _SURROGATE.sub(lone_surrogate, b)
        if spaces:  # whitespace between tokens may be any whitespace; inside strings it is invalid
            b = b.translate(_SPACES)
        return b

    def blocks():
        nonlocal json_bytes, truncated_gzip, trailing_bytes
        while True:
            try:
                b = stream.read(BLOCK)
            except EOFError:
                # GzipFile drops the block it was decoding: get the rest from zlib
                rest = _GzipRest(path, json_bytes)
                for b in rest:
                    json_bytes += len(b)
                    yield clean(b) if sanitize else b
                trailing_bytes = rest.trailing
                truncated_gzip = not trailing_bytes
                return
            except _GZIP_ERRORS as e:
                # the stdlib reader reports data appended after a complete stream as a bad header
                rest = _GzipRest(path, json_bytes)
                tail = b"".join(rest)
                if not rest.trailing:
                    raise TraceError(path, f"corrupt gzip data ({e})") from None
                json_bytes += len(tail)
                trailing_bytes = rest.trailing
                if tail:
                    yield clean(tail) if sanitize else tail
                return
            if not b:
                return
            json_bytes += len(b)
            yield clean(b) if sanitize else b

    try:
        it = blocks()
        found, head = read_head(path, it)
        if not found:
            if truncated_gzip:
                raise TraceError(path, "truncated gzip: the file ends before any trace events")
            if not head.strip():
                raise TraceError(path, "empty file (only whitespace)")
            if head.lstrip()[:1] == b"{":
                problem = json_problem(head)
                raise (NotATraceError if problem.startswith("not a trace") else TraceError)(path, problem)
            raise TraceError(path, "not JSON")
        bare, start, prefix = found
        metadata = {} if bare else parse_metadata(path, prefix)
        est = _gzip_isize(path) if compressed else size
        writer = _ChunkWriter(tmpdir, stem, est // max(chunks, 1) + 1, on_chunk)
        # Hold back the last TAIL_KEEP bytes (as a list of blocks: no re-copying)
        # so the end of the array can be found once the stream ends.
        pending = [head[start:]]
        pending_len = len(pending[0])
        nesting = _Nesting() if salvage and exact_salvage else None
        for b in it:
            pending.append(b)
            pending_len += len(b)
            while len(pending) > 1 and pending_len - len(pending[0]) >= TAIL_KEEP:
                first = pending.pop(0)
                pending_len -= len(first)
                if nesting:
                    nesting.feed(first)
                writer.write(first)
        held = b"".join(pending)
        del pending
        end, suffix = find_array_end(held, bare)
        salvaged_bytes, preview, salvage_note = 0, "", ""
        salvaged = end is None
        if end is None:
            where = "gzip stream" if truncated_gzip else "file"
            if not salvage:
                raise TraceError(path, f"truncated: the {where} ends inside 'traceEvents' "
                                 "(the profiler probably died mid-write); "
                                 "pass --salvage to load the complete events")
            if nesting is not None:
                end = nesting.last_event_end(held)
            else:
                end = _last_boundary_guess(held)
            if end is None:
                raise TraceError(path, "truncated: no complete event found to salvage")
            dropped = held[end:]
            salvaged_bytes = len(dropped.strip(WS + b","))
            preview = dropped.strip(WS + b",")[:80].decode("utf-8", "replace")
            held = held[:end]
            suffix = {}
            if not salvaged_bytes:  # say so: salvaged_bytes = 0 alone looks like a complete file
                salvage_note = ("truncated file salvaged: it ends right after a complete event "
                                "(nothing dropped)")
        else:
            held = held[:end]
            if truncated_gzip and salvage:
                salvage_note = "truncated gzip stream salvaged: the JSON inside it is complete"
        if truncated_gzip and not salvage and end is not None:
            raise TraceError(path, "truncated gzip: the compressed stream ends early "
                             "(pass --salvage to load what is there)")
        writer.write(held)
        writer.close()
        metadata.update(suffix or {})
        # drain the hash: for gzip the decompressor may not have read the trailer bytes
        rest = raw.read()
        hashing.hash.update(rest)
        notes = [salvage_note] if salvage_note else []
        if trailing_bytes:
            notes.append(f"{trailing_bytes:,} byte(s) after the end of the gzip stream ignored")
        if counts["utf8"]:
            notes.append(f"{counts['utf8']:,} invalid UTF-8 sequence(s) replaced by U+FFFD")
        if counts["surrogate"]:
            notes.append(f"{counts['surrogate']:,} unpaired UTF-16 surrogate escape(s) replaced by \\ufffd")
        if counts["ctrl"]:
            notes.append(f"{counts['ctrl']:,} raw control character(s) in strings escaped")
        if spaces:
            notes.append("raw tab/newline characters inside strings replaced by spaces")
        return SplitTrace(path=path, chunks=writer.paths, metadata=metadata, size_bytes=size,
                          json_bytes=json_bytes, content_hash_value=hashing.hash.hexdigest(),
                          compressed=compressed, salvaged_bytes=salvaged_bytes,
                          salvaged_preview=preview, notes=notes, sanitized=sanitize, spaces=spaces,
                          salvaged=salvaged, exact_salvage=salvaged and exact_salvage)
    finally:
        try:
            stream.close()
        finally:
            raw.close()
