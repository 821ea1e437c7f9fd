"""Small traces are parsed, checked and inserted in groups (load._Grouper,
stage_events.sql grouped, validate.sql per file of a group): every table must
come out row for row as when the files are loaded one by one, and every
per-file guarantee holds (a bad file is named, nothing is written, a file
loaded twice changes nothing)."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

import duckprof
from duckprof import load, sqlfiles, synth
from duckprof.session import DERIVED
from duckprof.errors import TraceError
from conftest import HANDMADE, corpus_path, group_sizes, rows, slow_when

# every table a load writes, keyed so that rows compare across trace ids
TABLES = {
    "events": "SELECT t.path, e.* EXCLUDE (trace_id) FROM events e LEFT JOIN traces t USING (trace_id)",
    "traces": "SELECT * EXCLUDE (loaded_at) FROM traces",
    "devices": "SELECT * FROM devices",
    "op_estimates": "SELECT * FROM op_estimates",
    "trace_facts": "SELECT * FROM trace_facts",
    "run_tags": "SELECT * EXCLUDE (set_at) FROM run_tags",
    **{t: f"SELECT * FROM {t}" for t in DERIVED},
}


def _tables(s) -> dict:
    return {k: sorted(rows(s, q), key=repr) for k, q in TABLES.items()}


@pytest.fixture
def mixed(tmp_path):
    """Small traces of several Kineto versions and shapes: .gz and plain,
    pre-Kineto, ROCm, CPU only, with_stack (crossing ProfilerStep), fractional
    absolute us (exact timestamps: its group is parsed again file by file),
    baseTimeNanoseconds, two ranks on the same pids/tids, no events at all."""
    files = [str(corpus_path(f)) for f in ("mi250_rocm_train.json.gz", "a100_alexnet_train.json.gz",
                                           "legacy_categories_inference.json.gz", "cpu_only_rank34.json.gz",
                                           "backward_thread_minimal.json", "sampled_rank0_no_devprops.json.gz",
                                           "sampled_rank1_no_devprops.json.gz")]
    files += [str(HANDMADE / f) for f in ("nesting3.json", "pre_kineto_torch17.json", "fractional_base.json",
                                         "absolute_fractional.json")]
    stack = tmp_path / "stack_rank3.json.gz"
    synth.generate(str(stack), events=3_000, seed=4, stack=3)
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"schemaVersion": 1, "traceEvents": []}))
    return files + [str(stack), str(empty)]


def _together(monkeypatch) -> dict:
    """Per group the stager parsed (its table's name, dp_stage.grp_N_t),
    whether its files were parsed together (True) or must be staged again
    file by file (False): a part failed to parse, or the group's check
    (markers, exact timestamps) failed."""
    out = {}
    real_stage, real_check = load._ChunkStager._stage_group, load._ChunkStager.check_group

    def stage_group(self, table, joined, part=0):
        try:
            return real_stage(self, table, joined, part)
        except Exception:
            out[table] = False
            raise

    def check_group(self, g):
        staged = real_check(self, g)
        out[g.table] = staged is not None
        return staged
    monkeypatch.setattr(load._ChunkStager, "_stage_group", stage_group)
    monkeypatch.setattr(load._ChunkStager, "check_group", check_group)
    return out


def _grouped_and_alone(monkeypatch, files):
    """Every table after one load of `files` in groups, and after one load
    call per file without groups or batches; the sizes of the groups."""
    groups = group_sizes(monkeypatch)
    with duckprof.connect() as s:
        report = s.load(files, run="job", tags={"commit": "abc"})
        grouped = _tables(s)
        ids = [f.trace_id for f in report.files]
        grouped["notes"] = [f.notes for f in report.files]
    made = list(groups)
    with monkeypatch.context() as m:
        m.setattr(load, "GROUP_BYTES", 0)
        m.setattr(load, "BATCH_BYTES", 0)
        with duckprof.connect() as s:
            alone = [s.load(f, run="job", tags={"commit": "abc"}).files[0] for f in files]
            single = _tables(s)
    single["notes"] = [f.notes for f in alone]
    alone = [f.trace_id for f in alone]
    assert groups == made  # none made one by one
    assert ids == alone == list(range(1, len(files) + 1))
    assert len(grouped["trace_facts"]) == len(files)
    return grouped, single, made


@pytest.mark.slow  # 13 files loaded twice
def test_grouped_load_equals_one_by_one(monkeypatch, mixed):
    grouped, single, groups = _grouped_and_alone(monkeypatch, mixed)
    assert max(groups) >= 4, groups  # parsed in groups indeed
    assert len(grouped["events"]) > 10_000
    assert sum(1 for r in grouped["events"] if r[-4] is not None) > 1_000  # nested (parent_event_id)
    for k in list(TABLES) + ["notes"]:
        assert grouped[k] == single[k], k


def _odd_job(tmp_path) -> list:
    """Two small copies of a trace, a corpus trace, a with_stack trace (.gz),
    and a file that needs sanitising (a raw control character, invalid
    UTF-8: its group's parse fails) last."""
    files = [str(f) for f in _bad_copies(tmp_path, n=2)] + [str(corpus_path("backward_thread_minimal.json"))]
    stack = tmp_path / "stack.json.gz"
    synth.generate(str(stack), events=400, seed=1, stack=2)
    odd = tmp_path / "odd_names.json"
    odd.write_bytes((HANDMADE / "nesting3.json").read_bytes().replace(b'"name": "', b'"name": "ctl\x01\xff', 1))
    assert b"ctl\x01\xff" in odd.read_bytes()
    return files + [str(stack), str(odd)]


def _same_rows(grouped, single):
    assert len(grouped["events"]) > 400
    assert sum(any(str(v).startswith("ctl\x01\ufffd") for v in r) for r in grouped["events"]) == 1
    assert grouped["notes"][-1] == single["notes"][-1] and "invalid UTF-8" in " ".join(grouped["notes"][-1])
    for k in list(TABLES) + ["notes"]:
        assert grouped[k] == single[k], k


def test_grouped_load_equals_one_by_one_quick(monkeypatch, tmp_path):
    """Two groups of at most a batch (BATCH_FILES = 3) in parts of at most two
    files (GROUP_FILES = 2): three files parsed in two parts into one table,
    and a group whose part holds a file that needs sanitising, whose parse
    fails: its files are parsed again one by one."""
    monkeypatch.setattr(load, "GROUP_FILES", 2)
    monkeypatch.setattr(load, "BATCH_FILES", 3)
    files = _odd_job(tmp_path)
    together = _together(monkeypatch)
    grouped, single, groups = _grouped_and_alone(monkeypatch, files)
    assert groups == [2, 1, 2]
    # the odd file's group parsed again file by file
    assert together == {"dp_stage.grp_0_t": True, "dp_stage.grp_1_t": False}
    _same_rows(grouped, single)


def test_a_group_whose_last_part_fails_is_staged_file_by_file(monkeypatch, tmp_path):
    """One group of five files in parts of two (GROUP_FILES = 2): the third
    part, the odd file alone, fails to parse after the first two have filled
    the group's table: the table is dropped and every file of the group is
    taken out of its part's file and staged again alone."""
    monkeypatch.setattr(load, "GROUP_FILES", 2)
    files = _odd_job(tmp_path)
    together = _together(monkeypatch)
    grouped, single, groups = _grouped_and_alone(monkeypatch, files)
    assert groups == [2, 2, 1]
    assert together == {"dp_stage.grp_0_t": False}
    _same_rows(grouped, single)


def test_group_with_files_without_events_equals_one_by_one(monkeypatch, tmp_path):
    """A group joined into one file whose traces include two without events
    (an empty traceEvents, one of only whitespace, neither gets a segment or
    a marker), first and in the middle: parsed together, every table equal
    to one load call per file."""
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"schemaVersion": 1, "traceEvents": []}))
    blank = tmp_path / "blank.json"
    blank.write_text('{"schemaVersion": 1, "traceEvents": [\n' + " " * 5000 + '\n]}')
    copies = [str(f) for f in _bad_copies(tmp_path, n=3)]
    files = [str(empty), copies[0], str(blank), copies[1], str(corpus_path("backward_thread_minimal.json")),
             copies[2]]
    together = _together(monkeypatch)
    grouped, single, groups = _grouped_and_alone(monkeypatch, files)
    assert groups == [6] and together == {"dp_stage.grp_0_t": True}
    for f in (str(empty), str(blank)):  # a trace each, without events
        assert sum(f in r for r in grouped["traces"]) == 1 and not [r for r in grouped["events"] if r[0] == f]
    assert len(grouped["events"]) > 30
    for k in list(TABLES) + ["notes"]:
        assert grouped[k] == single[k], k


def _bad_copies(tmp_path, n=6):
    """n small copies of one trace, each a different file (a distinct rank)."""
    doc = json.loads((HANDMADE / "nesting3.json").read_text())
    files = []
    for r in range(n):
        doc["distributedInfo"] = {"rank": r, "world_size": n}
        f = tmp_path / f"rank{r}.json"
        f.write_text(json.dumps(doc))
        files.append(f)
    return files


@pytest.mark.parametrize("damage", slow_when(["malformed", "nan_ts", "gz_malformed"], {"nan_ts", "gz_malformed"}))
def test_bad_file_in_a_group_is_named_and_nothing_is_written(monkeypatch, tmp_path, damage):
    groups = group_sizes(monkeypatch)
    files = _bad_copies(tmp_path)
    bad = files[3]
    text = bad.read_text()
    if damage == "malformed":
        bad.write_text(text.replace('"ph": "X"', '"ph" "X"', 1))
    elif damage == "nan_ts":
        doc = json.loads(text)
        doc["traceEvents"][2]["ts"] = float("nan")
        bad.write_text(json.dumps(doc))
    else:
        gz = bad.with_suffix(".json.gz")
        gz.write_bytes(gzip.compress(text.replace('"name"', '"name":', 1).encode()))
        bad.unlink()
        files[3] = bad = gz
    db = str(tmp_path / "perf.duckdb")
    with duckprof.connect(db) as s:
        s.load(files[:1], run="before")
        before = _tables(s)
        with pytest.raises(TraceError) as e:
            s.load(files, run="job")
        assert _tables(s) == before
    assert groups == [6], groups  # the bad file was staged in a group with the others
    msg = str(e.value)
    assert msg.startswith(str(bad)) and "\n" not in msg
    assert all(str(f) not in msg for f in files if f != bad)
    expected = {"malformed": "not valid JSON", "nan_ts": "not a usable number", "gz_malformed": "not valid JSON"}[damage]
    assert expected in msg, msg


def test_a_group_is_checked_in_its_table_and_per_file_only_when_an_event_is_bad(monkeypatch, tmp_path):
    """validate.sql reads a group's table once, whole; each file's events are
    counted from the markers (check_group), and only a bad event sends the
    check per file through the group's view (a pass that numbers every event
    by its file) to name the file. Six ranks in parts of 2 (GROUP_FILES), one
    without events: the per-file pass is not run and every table equals one
    load call per file; with a NaN ts in one rank it runs, once, and names
    that rank."""
    files = _bad_copies(tmp_path)
    files[4].write_text(json.dumps({"schemaVersion": 1, "traceEvents": [], "distributedInfo": {"rank": 4}}))
    files = [str(f) for f in files]
    monkeypatch.setattr(load, "GROUP_FILES", 2)
    checks = []
    real = sqlfiles.render

    def render(name, **kw):
        if name == "load/validate.sql":
            checks.append((kw["grouped"], kw["whole"]))
        return real(name, **kw)
    monkeypatch.setattr(sqlfiles, "render", render)
    together = _together(monkeypatch)
    grouped, single, groups = _grouped_and_alone(monkeypatch, files)
    assert groups == [2, 2, 2] and together == {"dp_stage.grp_0_t": True}  # one group, three parts
    assert checks[0] == (False, True) and (True, False) not in checks
    for k in TABLES:
        assert grouped[k] == single[k], k
    doc = json.loads(open(files[2]).read())
    doc["traceEvents"][5]["ts"] = float("nan")
    open(files[2], "w").write(json.dumps(doc))
    checks.clear()
    with duckprof.connect() as s, pytest.raises(TraceError) as e:
        s.load(files, run="job")
    assert checks == [(False, True), (True, False)]
    assert str(e.value).startswith(files[2] + ": ") and "not a usable number" in str(e.value)


def test_a_file_that_swallows_the_marker_is_named(monkeypatch, tmp_path):
    """A group is parsed as one chunk of its files' events with a marker event
    between two files (split.concatenate_chunks). Two damaged files can make
    valid JSON together: a.json ends inside an args list that b.json closes
    (the splitter takes each for a trace: the reverse scan stops looking for
    the '[' of the last array 64 KB back). The marker is then inside a's args,
    not an event: the group is parsed again file by file, and a.json is named
    as when it is loaded alone; nothing is written."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"l": ['
                 + "0, " * 30_000 + "1]}")
    b.write_text('{"traceEvents": [' + "2, " * 30_000 + '2]}}, {"ph": "X", "name": "b", "ts": 2, "dur": 1}]}')
    start = len('{"traceEvents": [')
    joined = "[" + a.read_text()[start:-2] + ", {}, " + b.read_text()[start:-2] + "]"
    assert len(json.loads(joined)) == 2  # together they are valid JSON
    together = _together(monkeypatch)
    db = str(tmp_path / "perf.duckdb")
    with duckprof.connect(db) as s:
        s.load([str(f) for f in _bad_copies(tmp_path, n=1)], run="before")
        before = _tables(s)
        with pytest.raises(TraceError) as e:
            s.load([str(a), str(b)], run="job")
        assert _tables(s) == before
    assert list(together.values()) == [False]
    assert str(e.value).startswith(f"{a}: not valid JSON inside traceEvents"), str(e.value)


def test_joined_chunk(tmp_path):
    """A group's chunk file (split.JoinedChunk): traces without events (an
    empty or whitespace-only array, one of 9,000 spaces; as bytes or as a
    chunk file) add nothing and no marker; the others are joined with one
    marker between two; each trace's events come out again alone."""
    from duckprof.split import JoinedChunk
    texts = ["[ ]", '[{"a": 1}, {"a": 2}]', "[" + " " * 9_000 + "]", '[\n {"a": 3}\n]', "[]", '[{"a": 4}]']
    joined = JoinedChunk(str(tmp_path / "joined.json"), b'{"m": 0}')
    for k, t in enumerate(texts):
        if k % 2:
            (tmp_path / f"c{k}.json").write_text(t)
            joined.add_chunk(str(tmp_path / f"c{k}.json"))
        else:
            joined.add_events(t[1:-1].encode())
    joined.close()
    assert joined.segments == [1, 3, 5]
    assert json.loads(open(joined.path).read()) == [{"a": 1}, {"a": 2}, {"m": 0}, {"a": 3}, {"m": 0}, {"a": 4}]
    for k, t in enumerate(texts):
        joined.extract(k, str(tmp_path / "alone.json"))
        assert json.loads((tmp_path / "alone.json").read_text()) == json.loads(t)
    empty = JoinedChunk(str(tmp_path / "empty.json"), b'{"m": 0}')
    empty.add_events(b" ")
    empty.close()
    assert empty.segments == [] and json.loads(open(empty.path).read()) == []


def test_file_loaded_twice_in_groups_changes_nothing(monkeypatch, tmp_path):
    files = _bad_copies(tmp_path, n=5)
    twin = tmp_path / "copy_of_rank2.json"
    shutil.copy(files[2], twin)
    groups = group_sizes(monkeypatch)
    with duckprof.connect() as s:
        first = s.load(files + [twin], run="job")
        assert [f.skipped != "" for f in first.files] == [False] * 5 + [True]
        assert groups == [5]  # the twin was not parsed
        after_first = _tables(s)
        again = s.load(files, run="job")
        assert all(f.skipped for f in again.files)
        assert _tables(s) == after_first
        assert rows(s, "SELECT count(*), count(DISTINCT rank) FROM traces") == [(5, 5)]


def _five_ranks(tmp_path) -> list:
    files = []
    for r in range(5):
        files.append(str(tmp_path / f"rank{r}.json"))
        synth.generate(files[-1], events=400, seed=r, rank=r, world_size=5)
    return files


def _renders(monkeypatch) -> list:
    """The name of every SQL file rendered from now on."""
    rendered = []
    real = sqlfiles.render

    def render(name, **kw):
        rendered.append(name)
        return real(name, **kw)
    monkeypatch.setattr(sqlfiles, "render", render)
    return rendered


def _relations(monkeypatch, names=("load/insert_events.sql",)) -> list:
    """From now on, per rendering of a batch statement in `names` (of its
    staged events): (name, [(view, positions) of each relation it reads])."""
    read = []
    real = sqlfiles.render

    def render(name, **kw):
        if name in names and kw.get("raws") is not None:
            read.append((name, [(raw.get("view"), raw.get("positions")) for raw in kw["raws"]]))
        return real(name, **kw)
    monkeypatch.setattr(sqlfiles, "render", render)
    return read


def test_a_group_is_not_cut_between_batches_by_their_bytes(monkeypatch, tmp_path):
    """A batch of grouped files ends at the end of a group even past its
    byte cap (BATCH_BYTES x GROUPED_BATCH): the nesting and the insert of a
    batch read all of a group's staged rows, so a group in two batches was
    read twice by each. Five ranks in groups of three and two, a cap of two
    files: two batches of whole groups (they were three, each group in two),
    the same rows as one load call per file."""
    files = _five_ranks(tmp_path)
    size = max(len(open(f, "rb").read()) for f in files)
    monkeypatch.setattr(load, "GROUP_FILES", 3)
    monkeypatch.setattr(load, "GROUPED_BATCH", 1)
    monkeypatch.setattr(load, "BATCH_BYTES", 2 * size)
    inserts = _relations(monkeypatch)
    grouped, single, groups = _grouped_and_alone(monkeypatch, files)
    assert groups == [3, 2]
    assert [r for _, r in inserts[:2]] == [[("dp_stage.grp_0", [0, 1, 2])], [("dp_stage.grp_1", [0, 1])]]
    for k in TABLES:
        assert grouped[k] == single[k], k


def test_a_group_of_several_parts_is_one_relation_of_its_batch(monkeypatch, tmp_path):
    """The parts of a group (GROUP_FILES = 2: five ranks in parts of 2, 2
    and 1, parsed side by side) fill one staged table, which the batch's
    insert (and nesting, into a file) read as one relation: DuckDB inserts a UNION ALL of
    several tables table by table, appending each thread's share of a small
    one twice (benchmarks/README.md, ranks12). The same rows as one load call
    per file."""
    files = _five_ranks(tmp_path)
    monkeypatch.setattr(load, "GROUP_FILES", 2)
    inserts = _relations(monkeypatch, ("load/insert_events.sql", "load/nesting.sql"))
    grouped, single, groups = _grouped_and_alone(monkeypatch, files)
    assert groups == [2, 2, 1]
    # (in memory the nesting is left to first use: of the stored events)
    # (then the five files loaded one by one: a relation each)
    assert inserts[0] == ("load/insert_events.sql", [("dp_stage.grp_0", [0, 1, 2, 3, 4])])
    assert len(inserts) == 1 + 5
    for k in TABLES:
        assert grouped[k] == single[k], k


def test_groups_are_even_and_each_is_a_batch(monkeypatch, tmp_path):
    """Eight files of one size, a grouped batch of five: two groups of four
    (as many equal groups as the files' bytes make batches, rather than five
    and three), and the second group starts a batch of its own though its
    first file would fit in the first's: a batch reads one staged table."""
    files = [str(f) for f in _bad_copies(tmp_path, n=8)]
    size = len(open(files[0], "rb").read())
    assert all(len(open(f, "rb").read()) == size for f in files)
    monkeypatch.setattr(load, "GROUPED_BATCH", 1)
    monkeypatch.setattr(load, "BATCH_BYTES", 5 * size)
    inserts = _relations(monkeypatch)
    grouped, single, groups = _grouped_and_alone(monkeypatch, files)
    assert groups == [4, 4]
    assert [r for _, r in inserts[:2]] == [[("dp_stage.grp_0", [0, 1, 2, 3])], [("dp_stage.grp_1", [0, 1, 2, 3])]]
    for k in TABLES:
        assert grouped[k] == single[k], k


def test_a_group_whose_files_follow_one_another_in_its_batch_is_read_without_a_lookup(monkeypatch, tmp_path):
    """A group whose files are all in its batch, one after another (so far
    always: a group is a batch, maybe after files staged alone), is read
    with src + offset (normalize.sql) instead of a lookup of each event's
    file in the list of positions: a trace staged alone, then a group of four
    in the same batch (offset 1); the same rows as one load call per file."""
    big = tmp_path / "big.json"
    synth.generate(str(big), events=400, seed=1)
    small = [str(f) for f in _bad_copies(tmp_path, n=4)]
    monkeypatch.setattr(load, "GROUPED_FILE_BYTES", max(len(open(f, "rb").read()) for f in small))
    assert big.stat().st_size > load.GROUPED_FILE_BYTES
    read = []
    real = sqlfiles.render

    def render(name, **kw):
        if name == "load/insert_events.sql":
            read.append([(raw.get("view"), raw.get("positions"), raw.get("offset")) for raw in kw["raws"]])
        return real(name, **kw)
    monkeypatch.setattr(sqlfiles, "render", render)
    grouped, single, groups = _grouped_and_alone(monkeypatch, [str(big)] + small)
    assert groups == [4]
    assert read[0] == [("dp_stage.raw_0", None, None), ("dp_stage.grp_0", [1, 2, 3, 4], 1)]
    for k in TABLES:
        assert grouped[k] == single[k], k


@pytest.mark.slow  # the quick run has test_grouped_load_equals_one_by_one_quick
def test_derived_tables_filled_once_per_load(monkeypatch, tmp_path):
    """A job's derived tables (schema 4, sql/load/derived_*.sql) are filled
    by one statement each for all the traces of the load, not one per trace
    or per batch: with thousands of rank files, per-trace statements would
    cost more than the rows (GROUP_FILES = 2, BATCH_FILES = 2: three groups,
    three batches). Every trace gets its rows."""
    monkeypatch.setattr(load, "GROUP_FILES", 2)
    monkeypatch.setattr(load, "BATCH_FILES", 2)
    files = _five_ranks(tmp_path)
    rendered = _renders(monkeypatch)
    with duckprof.connect() as s:
        s.load(files, run="job")
        per_trace = rows(s, "SELECT count(DISTINCT trace_id) FROM derived_launches")
    assert rendered.count("load/insert_events.sql") == 3  # three batches
    assert [rendered.count(f"load/{t}.sql") for t in DERIVED] == [1] * len(DERIVED)
    assert per_trace == [(5,)]


def test_long_args_are_staged_apart_and_loaded_whole(monkeypatch, tmp_path):
    """A job of 1,000 ranks: every NCCL event carries a ~5 KB "Process Group
    Ranks" arg, a few per file among many short args. Staged in the args
    column, DuckDB started a 256 KB overflow block for nearly every segment
    of ~1,500 events that had one (here 10 blocks for 0.6 MB of long args;
    in the 1000 x 1 MB benchmark 370 MB, by which its staged events outgrew
    the load's memory limit); in args_long (stage_events.sql) they share
    fewer (here 6). Either way each event's args come back whole."""
    files = []
    for r in range(4):
        path = tmp_path / f"rank{r}.json"
        synth.generate(str(path), target_bytes=1_500_000, seed=r, rank=r, world_size=1000)
        files.append(str(path))
    long_args = [(str(p), k, e["args"]) for p in files
                 for k, e in enumerate(json.load(open(p))["traceEvents"], start=1)
                 if len(json.dumps(e.get("args", {}))) >= 4096]  # DuckDB's strings kept apart
    long_bytes = sum(len(json.dumps(a)) for _, _, a in long_args)
    assert len(long_args) >= 40 and long_bytes >= 200_000

    staged = {}
    real = load.Loader._nest_all

    def nest_all(self, prepared, next_id, tmp):
        staged["overflow"] = self.con.execute(
            "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'OVERFLOW_STRINGS'").fetchall()[0][0]
        staged["groups"] = len({id(p.group) for p, _ in prepared if p.group is not None})
        return real(self, prepared, next_id, tmp)
    monkeypatch.setattr(load.Loader, "_nest_all", nest_all)
    with duckprof.connect() as s:
        s.load(files, run="job")
        got = {(path, eid): json.loads(args) for path, eid, args in s.sql(
            "SELECT t.path, e.event_id, e.args FROM events e JOIN traces t USING (trace_id) "
            "WHERE strlen(e.args) >= 4096").fetchall()}
    assert staged["groups"] == 1  # the four files were parsed as one group
    # the long args and the blocks of (at most) a few segments of args_long
    assert staged["overflow"] <= long_bytes + 4 * 256 * 1024, (staged, long_bytes)
    assert got == {(p, k): a for p, k, a in long_args}


def test_a_batch_of_grouped_files_holds_more(monkeypatch, tmp_path):
    """Files parsed in groups are inserted in batches of up to GROUPED_BATCH
    x BATCH_BYTES (a few whole groups), other files in batches of up to
    BATCH_BYTES (a batch of several traces is inserted without keeping file
    order): five small files, BATCH_BYTES the size of two, make one batch
    when grouped and three when not."""
    files = _five_ranks(tmp_path)
    size = max(len(open(f, "rb").read()) for f in files)
    monkeypatch.setattr(load, "BATCH_BYTES", 2 * size)
    rendered = _renders(monkeypatch)
    for grouped_file_bytes, batches in ((load.GROUPED_FILE_BYTES, 1), (0, 3)):
        monkeypatch.setattr(load, "GROUPED_FILE_BYTES", grouped_file_bytes)
        rendered.clear()
        with duckprof.connect() as s:
            s.load(files, run="job")
            assert rows(s, "SELECT count(*) FROM traces") == [(5,)]
        assert rendered.count("load/stage_events.sql") == (1 if batches == 1 else 5)
        assert rendered.count("load/insert_events.sql") == batches
