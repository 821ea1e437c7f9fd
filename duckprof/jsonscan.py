"""Byte-level scanning of a Kineto trace's JSON, shared by the loader's
splitter (split.py) and augment (augment.py): where the traceEvents array
starts and ends, what the small rest of the file (the metadata) holds, where
one event ends and the next begins, and why a file is no trace.

None of it parses the events: the array is found by tokens at the top level
of the object, and event boundaries by a byte pattern, so a whole trace is
never held or decoded in Python.
"""

from __future__ import annotations

import json
import re

from .errors import NotATraceError, TraceError

#: JSON whitespace.
WS = b" \t\r\n"
#: Between two events of the array: '}' ',' '{' with any whitespace. A nested
#: '}, {' inside an event's args matches too: callers check what they cut.
EVENT_BOUNDARY = re.compile(rb"\}\s*,\s*\{")
#: How far into a file the traceEvents array may start.
MAX_PREFIX = 256 << 20
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')


def find_array_start(path, buf: bytes):
    """Return (is_bare_array, index just after '[', prefix bytes) or None if more data needed."""
    i = 0
    while i < len(buf) and buf[i] in WS:
        i += 1
    if i < len(buf) and buf[i:i + 3] == b"\xef\xbb\xbf":  # UTF-8 BOM
        i += 3
        while i < len(buf) and buf[i] in WS:
            i += 1
    if i >= len(buf):
        return None
    first = buf[i:i + 1]
    if first == b"[":
        j = i + 1
        while j < len(buf) and buf[j] in WS:
            j += 1
        if j < len(buf) and buf[j:j + 1] not in b"{]":
            raise NotATraceError(path, _array_problem(buf[j:j + 1]))
        if buf[j:j + 1] == b"{":
            _check_first_event(path, buf[j:j + _FIRST_EVENT_BYTES])
        return True, i + 1, b""
    if first != b"{":
        raise TraceError(path, "not JSON: the file does not start with '{' or '['"
                         + _text_kind(buf[i:i + 4096], buf[:16]))
    quick = _quick_array_start(buf, i)
    if quick is not None:
        return quick
    depth = 0
    want_colon = want_array = False
    keys, last = set(), None
    for m in _TOKEN.finditer(buf, i):
        tok = m.group()
        if want_array:
            if tok == b"[":
                return False, m.end(), buf[i:key_start]
            raise TraceError(path, "not a trace: 'traceEvents' is not an array")
        if want_colon:
            if tok != b":":
                want_colon = False
            else:
                want_array = True
                continue
        if tok in (b"{", b"["):
            depth += 1
        elif tok in (b"}", b"]"):
            depth -= 1
            if depth == 0:
                raise NotATraceError(path, object_problem(keys))
        elif depth == 1 and tok == b'"traceEvents"':
            key_start = m.start()
            want_colon = True
        elif depth == 1 and tok == b":" and last is not None:
            keys.add(last)
        last = tok if depth == 1 and tok[:1] == b'"' else None
    return None


# What torch.profiler writes besides the Kineto trace, which users hand to
# duckprof by mistake or leave in the trace directory: said by name, with the
# calls that write a trace.
_WRITE_A_TRACE = ("; duckprof loads the trace that torch.profiler's export_chrome_trace or "
                  "tensorboard_trace_handler writes")
_EXPORT_STACKS_LINE = re.compile(rb"[^\n;]+(?:;[^\n;]+)* \d+\r?\n")


def object_problem(keys) -> str:
    """Why a JSON object with these top-level keys (raw JSON strings, or str)
    is not a trace."""
    keys = {k.decode("utf-8", "replace") if isinstance(k, bytes) else json.dumps(k) for k in keys}
    if {'"nodes"', '"schema"'} <= keys:
        return ("not a trace: a PyTorch execution trace (ExecutionTraceObserver's 'schema' and 'nodes'), "
                "not a profiler trace" + _WRITE_A_TRACE)
    if '"rocprofiler-sdk-tool"' in keys:
        return ("not a trace: rocprofv3's JSON output ('rocprofiler-sdk-tool'), not a PyTorch profiler trace"
                + _WRITE_A_TRACE)
    names = sorted(_key_text(k) for k in keys)
    shown = ", ".join(n if len(n) <= 40 else n[:39] + "…" for n in names[:4])
    more = f" and {len(names) - 4} more" if len(names) > 4 else ""
    return ("not a trace: JSON object without a 'traceEvents' array"
            + (f" (its keys: {shown}{more})" if names else " (an empty object)"))


def _key_text(raw: str) -> str:
    """A top-level key as written in the file (a raw JSON string) as text, on
    one line (a key with a newline or another control character escaped, as
    JSON writes it: an error is one line)."""
    try:
        text = str(json.loads(raw))
    except ValueError:
        text = raw
    return text if text.isprintable() else json.dumps(text)


def _array_problem(first: bytes) -> str:
    """Why a top-level JSON array whose first value starts with `first` (not an
    object) is not a trace."""
    if first == b"[":
        return ("not a trace: a JSON array of arrays, not of event objects (torch's export_memory_timeline "
                "writes this)" + _WRITE_A_TRACE)
    kind = "strings" if first == b'"' else "numbers" if first in b"-0123456789" else "values"
    return f"not a trace: a JSON array of {kind}, not of event objects"


#: How much of a bare array's first object is read to tell an event from a record.
_FIRST_EVENT_BYTES = 64 << 10


def _check_first_event(path, head: bytes):
    """A bare array whose first object has no 'ph' (every trace event has its
    phase) is a list of records, e.g. a metrics or key_averages() dump beside
    the traces, not a trace. A first object longer than `head` is not judged."""
    try:
        first, _end = json.JSONDecoder().raw_decode(head.decode("utf-8", "replace"))
    except ValueError:
        return
    if isinstance(first, dict) and "ph" not in first:
        keys = ", ".join(k if k.isprintable() else json.dumps(k) for k in list(first)[:4]) or "none"
        raise NotATraceError(path, "not a trace: a JSON array of objects that are not trace events (the first "
                                   f"has no 'ph'; its keys: {keys})")


def _text_kind(head: bytes, start: bytes = b"") -> str:
    """What a file that is not JSON seems to be, as a suffix of its message
    (head: from its first non-blank byte; start: its first bytes)."""
    if start[8:12] == b"DUCK":  # DuckDB's file header: a checksum, then the magic bytes
        return " (it is a DuckDB database: pass it with --db FILE)"
    if _EXPORT_STACKS_LINE.match(head):
        return " (it looks like torch's export_stacks output, lines of 'frame;frame;... time')" + _WRITE_A_TRACE
    return ""

_TRACE_EVENTS_ARRAY = re.compile(rb'"traceEvents"\s*:\s*\[')
_PAIRS = (b"{}", b"[]")


def _quick_array_start(buf: bytes, i: int):
    """find_array_start's answer for the object opening at buf[i], found by
    C-level scans instead of a Python step per token (the metadata before
    traceEvents holds ~1 KB of device properties per GPU, read for every file
    of a job): the first '"traceEvents": [' is the key when the text between
    the '{' and it has no backslash, no other "traceEvents", whole strings
    and balanced brackets outside them (so the key is at the top level). None:
    the token walk decides (escapes, a nested "traceEvents", an unusual or
    broken file)."""
    m = _TRACE_EVENTS_ARRAY.search(buf, i + 1)
    if m is None:
        return None
    inner = buf[i + 1:m.start()]
    if b"\\" in inner or b'"traceEvents"' in inner or inner.count(b'"') % 2:
        return None
    if _unmatched(_outside_strings(inner), _PAIRS):
        return None
    return False, m.end(), buf[i:m.start()]


def read_head(path, blocks):
    """Read blocks of the file (an iterator of bytes) until the traceEvents
    array starts: (find_array_start's answer, the bytes read). The answer is
    None when the blocks ran out first; NotATraceError when no traceEvents
    array starts in the first MAX_PREFIX bytes."""
    head = b""
    for b in blocks:
        head += b
        found = find_array_start(path, head)
        if found:
            return found, head
        if len(head) > MAX_PREFIX:
            raise NotATraceError(path, "not a trace: no 'traceEvents' array in the first 256 MB")
    return None, head


# Tokens of the *reversed* tail: a bracket, or a run of everything between two
# brackets (strings, numbers, commas, colons). A '"' followed (in reversed
# order) by an odd run of backslashes was escaped in the file, so it does not
# end the string. Merging a run into one token leaves Python a step per bracket
# instead of one per string.
_RSTRING = rb'"[^"]*(?:"(?=(?:\\\\)*\\(?!\\))[^"]*)*"'
_RTOKEN = re.compile(rb'[{}\[\]]|(?:' + _RSTRING + rb'|[^"{}\[\]]+)+')
# the key before a top-level '[', at the start of the run that follows it
_RKEY = re.compile(rb'\s*:\s*(' + _RSTRING + rb')')


# Other top-level arrays (deviceProperties: ~1 KB per GPU) are far shorter. The
# scan is Python, one step per token: for a small trace it walks the whole
# array up to this budget, and a load may hold thousands of small rank files.
_SKIP_BUDGET = 64 << 10


def find_array_end(tail: bytes, bare: bool, start: int = 0):
    """Index of the ']' closing traceEvents in `tail`, and the parsed suffix dict.

    Scans tokens backwards from the end of the file (which is outside any
    string, so the scan is unambiguous). A top-level array value whose '['
    lies before the tail or more than _SKIP_BUDGET bytes back, or whose key is
    "traceEvents", is the events array. `start`: where the tail begins in
    `tail` (a whole file held in memory, from just after the array's '['),
    so that it need not be copied out.
    Returns (None, None) when the tail does not end the way a complete trace does.
    """
    # the end without its whitespace, found without copying the tail
    last = tail[-64:]
    n = len(tail) - len(last) + len(last.rstrip(WS))
    if n == len(tail) - len(last) and n > start:  # the tail ends in more whitespace than that
        n = len(tail[start:].rstrip(WS)) + start
    n = max(n, start)
    if bare:
        return (n - 1, {}) if n > start and tail[n - 1] == ord("]") else (None, None)
    if not (n > start and tail[n - 1] == ord("}")):
        return None, None
    quick = _quick_array_end(tail, start, n)
    if quick is not None:
        return quick
    # reversing costs ~3 ns a byte: a window just past the budget first (a
    # suffix of a few KB, as Kineto writes), then one with room for another
    # array after traceEvents, then all of it
    for window in (_SKIP_BUDGET + (16 << 10), 4 * _SKIP_BUDGET, n - start):
        window = min(window, n - start)
        found = _scan_reversed(tail[n - window:n][::-1], window == n - start)
        if found is not None or window == n - start:
            break  # decided (the suffix is longer than the window: the next scans more)
    if found is None or found is False:
        return None, None
    end = n - 1 - found
    return _suffix_after(tail, end)


# the reversed end of a file that _quick_array_end walks for the ']' to try: a
# Kineto suffix (traceName, displayTimeUnit, baseTimeNanoseconds, ...) is
# ~200 bytes
_QUICK_SUFFIX = 4 << 10
_FORWARD_PAIRS = (b"{}", b"[]", b"[}", b"{]")


def _quick_array_end(tail: bytes, start: int, n: int):
    """find_array_end's answer (n: the end without whitespace, a '}') when its
    first candidate, the first ']' that closes a top-level value going back
    from the end, lies in the last _QUICK_SUFFIX bytes and the _SKIP_BUDGET
    bytes before it, within the array, have no backslash and never leave the
    array it closes: what _scan_reversed finds, without reversing its window
    (~3 ns a byte, 80 KB: most of the scan's cost on a 1 MB rank). Only
    the few bytes of the suffix are reversed and walked; the budget is
    checked forward (_stays_inside_forward). None: the reversed scan decides
    (a long suffix, backslashes, a shorter array, another array found)."""
    k = min(_QUICK_SUFFIX, n - start)
    rev = tail[n - k:n][::-1]
    depth, at = 0, 0
    for m in _RTOKEN.finditer(rev):
        if m.start() != at:  # a byte no token took: a string cut by the window, or broken JSON
            return None
        at = m.end()
        tok = m.group()
        if tok in (b"}", b"]"):
            depth += 1
            if depth == 2 and tok == b"]":
                end = n - 1 - m.start()
                if end - _SKIP_BUDGET < start or not _stays_inside_forward(tail, end - _SKIP_BUDGET, end):
                    return None
                return _suffix_after(tail, end)
        elif tok in (b"{", b"["):
            depth -= 1
            if depth <= 0:
                return None
    return None


def _stays_inside_forward(data: bytes, start: int, end: int) -> bool:
    """Whether the walk of _scan_reversed over the budget before the ']' at
    `end` (data[start:end]) stays inside the array that ']' closes, counted in
    file order, for a range without backslash (else False: the reversed scan
    decides). Only quotes and brackets are kept; quotes pair up from the end
    (outside strings), so when their number is odd the first one closes a
    string that began before `start`: what precedes it is string content,
    dropped (the walk takes that string as one token, whose brackets do not
    count). Then strings go, matched pairs are removed until none is left,
    and an opening bracket left last is one the range does not close: the
    walk would leave the array there."""
    part = data[start:end]
    if b"\\" in part:
        return False
    marks = part.translate(None, _NOT_STRUCTURE)
    if marks.count(b'"') % 2:
        marks = marks[marks.index(b'"') + 1:]
    brackets = _PLAIN_STRING.sub(b"", marks.replace(b'""', b"")).replace(b'"', b"")
    return not _unmatched(brackets, _FORWARD_PAIRS).endswith((b"{", b"["))


def _scan_reversed(rev: bytes, whole: bool):
    """Reversed index of the ']' closing traceEvents; False if the tail is not a
    complete trace; None if the scan ran out of window before deciding
    (`whole`: the window is the whole tail, so running out decides)."""
    depth = 0
    closing = None  # reversed index of a depth-1 ']' being skipped
    want_key = False
    toks = _RTOKEN.finditer(rev)
    for m in toks:
        if closing is not None and m.start() - closing > _SKIP_BUDGET:
            break  # a top-level array this long can only be traceEvents
        tok = m.group()
        if want_key:
            want_key = False
            key = _RKEY.match(tok)
            if key and key.group(1)[::-1] == b'"traceEvents"':
                break
            closing = None
        if tok in (b"}", b"]"):
            depth += 1
            if depth == 2 and tok == b"]":
                closing = m.start()
                if _stays_inside(rev, m.end(), closing + _SKIP_BUDGET + 1):
                    return closing  # what the walk below would find, token by token
        elif tok in (b"{", b"["):
            depth -= 1
            if depth == 1 and closing is not None:
                want_key = True
            elif depth == 0:
                return False
    else:
        if not whole:
            return None
        if closing is None or depth < 2:
            return False
    return closing


# what lies between two brackets in the reversed tail: strings and the rest
_RNOT_BRACKET = re.compile(rb'(?:' + _RSTRING + rb'|[^"{}\[\]]+)+')
# a pair in the reversed tail: a closing bracket, then (further back) its opening one
_RPAIRS = (b"}{", b"][", b"}[", b"]{")
# every byte but quotes and brackets (bytes.translate deletes them), and a
# string among what is left when no backslash escapes a quote
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'"{}[]')))
_PLAIN_STRING = re.compile(rb'"[^"]*"')


def _outside_strings(part: bytes) -> bytes:
    """The brackets of `part` (JSON text without a backslash, maybe reversed)
    that lie outside strings, in order; a string left open at its end keeps
    its brackets (its quote goes).
    Adjacent quotes ("") go first, by bytes.replace: each is a string without
    brackets, or the end of one string and the start of the next with nothing
    but commas, colons, numbers or spaces between them; removing either keeps
    every bracket inside or outside a string as it was, and leaves the regex
    a few strings instead of one match per string of the text."""
    return _PLAIN_STRING.sub(b"", part.translate(None, _NOT_STRUCTURE).replace(b'""', b"")).replace(b'"', b"")


def _stays_inside(rev: bytes, start: int, stop: int) -> bool:
    """True if rev[start:stop] never leaves the top-level array whose closing
    ']' (reversed) ends just before start: the walk of _scan_reversed over the
    skip budget, done by C-level regex and replace instead of a Python step
    per bracket (a small trace's whole array lies within the budget). Only
    the brackets outside strings are kept (without a backslash in the range,
    quotes only open and close strings: everything else is deleted first,
    which is faster); matched pairs are removed until none is left; an
    opening bracket left first is the array's own. False also when rev ends
    before stop (then the walk decides). A string cut at stop leaves its
    brackets at the end, where they can only make this answer False."""
    if stop > len(rev):
        return False
    part = rev[start:stop]
    if b"\\" in part:
        brackets = _RNOT_BRACKET.sub(b"", part).replace(b'"', b"")
    else:
        brackets = _outside_strings(part)
    return not _unmatched(brackets, _RPAIRS).startswith((b"{", b"["))


def _unmatched(brackets: bytes, pairs) -> bytes:
    """The brackets left once matched pairs are taken out, again and again
    ('[{}]]' -> ']')."""
    while True:
        shorter = brackets
        for pair in pairs:
            shorter = shorter.replace(pair, b"")
        if len(shorter) == len(brackets):
            return brackets
        brackets = shorter


def _suffix_after(stripped: bytes, end: int):
    rest = stripped[end + 1:].strip(WS)
    if rest == b"}":
        return end, {}
    try:
        suffix = json.loads(b"{" + rest[1:]) if rest.startswith(b",") else None
    except ValueError:
        suffix = None
    if not isinstance(suffix, dict):
        return None, None
    return end, suffix


def parse_metadata(path, prefix: bytes) -> dict:
    text = prefix.rstrip(WS)
    if text.endswith(b","):
        text = text[:-1]
    try:
        meta = json.loads(text + b"}")
    except ValueError as e:
        raise TraceError(path, f"not valid JSON before traceEvents ({e})") from None
    return meta if isinstance(meta, dict) else {}

def json_problem(buf: bytes) -> str:
    """Why `buf` (a whole file without a usable traceEvents array) is not a trace."""
    text = buf.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except ValueError as e:
        if getattr(e, "pos", 0) >= len(text.rstrip()) or str(e).startswith("Unterminated string"):
            return "truncated: the file ends before the 'traceEvents' array"
        return f"not valid JSON ({e})"
    return object_problem(value if isinstance(value, dict) else ())


def is_one_value(obj: bytes) -> bool:
    """True if `obj` is one complete JSON value (the last event of a truncated file)."""
    try:
        json.loads(obj)
        return True
    except ValueError:
        return False

def value_length(data: bytes) -> int:
    """Byte length of the JSON value at the start of `data` (exact: it is
    decoded); ValueError if it is not one complete value."""
    text = data.decode("utf-8", "surrogateescape")
    _obj, end = json.JSONDecoder().raw_decode(text)
    return len(text[:end].encode("utf-8", "surrogateescape"))
