"""The SQL macro library (sql/templates/), each macro alone on inline VALUES:
no trace file. Expected values are worked out by hand in the comments."""

from __future__ import annotations

import re

import duckdb
import pytest

from conftest import REPO  # (also puts the repository on sys.path)

from duckprof import sqlfiles


def sql(text: str, params=None, **context) -> list[tuple]:
    """Render `text` (Jinja, with the macro library) and run it on an empty DuckDB."""
    rendered = sqlfiles._env().from_string(text).render(**context)
    con = duckdb.connect()
    try:
        if "trace_files" in rendered:
            con.execute("CREATE TABLE trace_files AS SELECT * FROM (VALUES (1, 'a', 0, 1000), (2, 'b', 0, 1000), "
                        "(3, 'a', 10, 900), (4, 'a', 2000, 3000)) t(trace_id, run, first_ts_ns, last_end_ns)")
        return con.execute(rendered, params or {}).fetchall()
    finally:
        con.close()


# -- merged_intervals ------------------------------------------------------------

INTERVALS = "VALUES (1, 10, 50), (1, 20, 30), (1, 50, 60), (1, 70, 80), (2, 5, 6), (2, 6, 6)"


def test_merged_intervals_touching_merge_and_partitions_stay_apart():
    # trace 1: [10,50] holds [20,30] and touches [50,60] -> [10,60]; [70,80] alone
    # trace 2: [5,6] touches the empty [6,6] -> [5,6]
    got = sql("""{% from 'templates/intervals.sql' import merged_intervals %}
        WITH src(trace_id, ts_ns, end_ns) AS (""" + INTERVALS + """)
        SELECT * FROM ({{ merged_intervals('src', ['trace_id']) }}) ORDER BY trace_id, start_ns""")
    assert got == [(1, 1, 10, 60, 50), (1, 2, 70, 80, 10), (2, 1, 5, 6, 1)]


def test_merged_intervals_firsts_are_the_opening_rows_and_count_counts():
    got = sql("""{% from 'templates/intervals.sql' import merged_intervals %}
        WITH src(trace_id, id, ts_ns, end_ns) AS (VALUES (1, 'a', 10, 20), (1, 'b', 15, 30), (1, 'c', 40, 41))
        SELECT * FROM ({{ merged_intervals('src', ['trace_id'], order=['id'], firsts={'first': 'id'}, count='n') }})
        ORDER BY start_ns""")
    assert got == [(1, 1, 10, 30, 20, "a", 2), (1, 2, 40, 41, 1, "c", 1)]


def test_merged_intervals_odd_rows_end_as_the_merge_of_their_rows():
    # sorted by start: [10,50] holds [20,30] (2 rows); [60,55] ends before it starts (alone,
    # ends at 55 though 50 ended before it); [70,80] holds [75,NULL] (2 rows, ends at 80);
    # [90,NULL] opens with no end (alone, no end); [NULL,5]: no start (alone, sorted last)
    got = sql("""{% from 'templates/intervals.sql' import merged_intervals %}
        WITH src(trace_id, ts_ns, end_ns) AS (VALUES (1, 10, 50), (1, 20, 30), (1, 60, 55), (1, 70, 80),
                                                     (1, 75, NULL), (1, 90, NULL), (1, NULL, 5))
        SELECT * FROM ({{ merged_intervals('src', ['trace_id'], count='n') }}) ORDER BY interval_no""")
    assert got == [(1, 1, 10, 50, 40, 2), (1, 2, 60, 55, -5, 1), (1, 3, 70, 80, 10, 2),
                   (1, 4, 90, None, None, 1), (1, 5, None, 5, None, 1)]


def test_merged_intervals_null_key_is_a_partition():
    got = sql("""{% from 'templates/intervals.sql' import merged_intervals %}
        WITH src(d, ts_ns, end_ns) AS (VALUES (NULL, 1, 3), (NULL, 2, 4), (0, 3, 5))
        SELECT d, start_ns, end_ns FROM ({{ merged_intervals('src', ['d']) }}) ORDER BY d NULLS FIRST""")
    assert got == [(None, 1, 4), (0, 3, 5)]


# -- union_lengths -----------------------------------------------------------------

def test_union_lengths_equals_merged_lengths_per_set():
    # all: [10,60] + [70,80] = 60; short (<= 20 long): [20,30] [50,60] [70,80] = 30
    got = sql("""{% from 'templates/intervals.sql' import union_lengths %}
        WITH src(trace_id, ts_ns, end_ns) AS (""" + INTERVALS + """)
        SELECT * FROM ({{ union_lengths('src', ['trace_id'],
                          {'all_ns': none, 'short_ns': 'end_ns - ts_ns <= 10'}) }}) ORDER BY trace_id""")
    assert got == [(1, 60, 30), (2, 1, 1)]


def test_capped_level_length():
    # trace 1, TensorBoard's test_gpu_utilization kernels (blocks per SM): [130,140] 0.5,
    # [135,150] 0.6, [145,170] 0.3, [200,220] 10.5, and one without a weight:
    # 0.5*5 + min(1.1, 1)*5 + 0.6*5 + 0.9*5 + 0.3*20 + min(10.5, 1)*20 = 41
    # trace 2: two equal intervals of 0.25 each start and end together: 0.5 * 10 = 5
    got = sql("""{% from 'templates/intervals.sql' import capped_level_length %}
        WITH src(trace_id, ts_ns, end_ns, w) AS (VALUES (1, 130, 140, 0.5), (1, 135, 150, 0.6), (1, 145, 170, 0.3),
             (1, 200, 220, 10.5), (1, 100, 300, NULL), (2, 0, 10, 0.25), (2, 0, 10, 0.25))
        SELECT * FROM ({{ capped_level_length('src', ['trace_id'], 'w') }}) ORDER BY trace_id""")
    assert [(t, round(v, 9)) for t, v in got] == [(1, 41.0), (2, 5.0)]


def test_union_lengths_negative_intervals():
    # [10,8] ends before it starts: adds nothing by default, -2 with
    # open_negative (HTA, times rounded to whole us); [20,25] adds 5 either way
    text = """{% from 'templates/intervals.sql' import union_lengths %}
        WITH src(k, ts_ns, end_ns) AS (VALUES (1, 10, 8), (1, 20, 25))
        SELECT busy_ns FROM ({{ union_lengths('src', ['k'], open_negative=neg) }})"""
    assert sql(text, neg=False) == [(5,)]
    assert sql(text, neg=True) == [(3,)]


def test_union_lengths_is_bigint():
    got = sql("""{% from 'templates/intervals.sql' import union_lengths %}
        WITH src(k, ts_ns, end_ns) AS (VALUES (1, 0::BIGINT, 4000000000000000000::BIGINT),
                                              (1, 5000000000000000000::BIGINT, 9000000000000000000::BIGINT))
        SELECT typeof(busy_ns), busy_ns FROM ({{ union_lengths('src', ['k']) }})""")
    assert got == [("BIGINT", 8000000000000000000)]


# -- covered_length ---------------------------------------------------------------

def test_covered_length_of_windows():
    # busy [10,60] [70,80]; windows: [0,100] -> 60; [55,75] -> 5 + 5 = 10;
    # [60,70] -> 0; [0,5] -> 0 (before any interval); [75,200] -> 5 (after the last)
    got = sql("""{% from 'templates/intervals.sql' import covered_length %}
        WITH busy(trace_id, start_ns, end_ns) AS (VALUES (1, 10, 60), (1, 70, 80)),
        w(trace_id, id, ts_ns, end_ns) AS (VALUES (1, 'a', 0, 100), (1, 'b', 55, 75), (1, 'c', 60, 70),
                                               (1, 'd', 0, 5), (1, 'e', 75, 200), (2, 'f', 0, 100))
        SELECT id, covered_ns FROM ({{ covered_length('w', 'busy', ['trace_id']) }}) ORDER BY id""")
    assert got == [("a", 60), ("b", 10), ("c", 0), ("d", 0), ("e", 5), ("f", 0)]


def test_covered_length_when_a_window_starts_or_ends_inside_an_interval():
    # intervals [0,10] [20,50]; window [5,25] -> 5 (5..10) + 5 (20..25); [30,30] -> 0;
    # [10,20] -> 0 (touching both); [0,60] -> 40
    got = sql("""{% from 'templates/intervals.sql' import covered_length %}
        WITH busy(k, start_ns, end_ns) AS (VALUES (1, 0, 10), (1, 20, 50)),
        w(k, id, ts_ns, end_ns) AS (VALUES (1, 'a', 5, 25), (1, 'b', 30, 30), (1, 'c', 10, 20), (1, 'd', 0, 60))
        SELECT id, covered_ns FROM ({{ covered_length('w', 'busy', ['k']) }}) ORDER BY id""")
    assert got == [("a", 10), ("b", 0), ("c", 0), ("d", 40)]


# -- covered_lengths --------------------------------------------------------------

def test_covered_lengths_of_nested_sets_in_overlapping_windows():
    # key 1: class 1 [10,20] [10,12] [15,30] [50,60] (union [10,30] [50,60]); class 2 [25,55] and
    # [70,65] (ends before it starts: nothing); class 0 [0,5]. key 2: class 1 [0,100]. key NULL: class 1 [0,10].
    # one = class 1, one_two = classes 1 and 2 ([10,60]), zero = class 0.
    # a [0,100]: one 20 + 10 = 30, one_two 50, zero 5;  a2: the same window again;
    # b [12,52]: one 18 + 2 = 20, one_two 40;  c [30,50]: one 0 (touches [10,30] and [50,60]), one_two 20;
    # d [200,300]: nothing;  g [20,20]: empty;  h [60,80]: nothing (the backwards interval adds nothing);
    # e (key 2) [40,60]: 20 and 20;  n (key NULL) [5,20]: 5 and 5;  z [NULL,50]: 0 (kept)
    got = sql("""{% from 'templates/intervals.sql' import covered_lengths %}
        WITH iv(k, class, ts_ns, end_ns) AS (VALUES (1, 1, 10, 20), (1, 1, 10, 12), (1, 1, 15, 30), (1, 1, 50, 60),
                                                    (1, 2, 25, 55), (1, 2, 70, 65), (1, 0, 0, 5), (2, 1, 0, 100),
                                                    (NULL, 1, 0, 10)),
        w(k, id, ts_ns, end_ns) AS (VALUES (1, 'a', 0, 100), (1, 'a2', 0, 100), (1, 'b', 12, 52), (1, 'c', 30, 50),
                                           (1, 'd', 200, 300), (1, 'g', 20, 20), (1, 'h', 60, 80), (2, 'e', 40, 60),
                                           (NULL, 'n', 5, 20), (1, 'z', NULL, 50))
        SELECT id, one, one_two, zero FROM ({{ covered_lengths('w', 'iv', ['k'],
                                                            sets={"one": [1], "one_two": [1, 2], "zero": [0]}) }})
        ORDER BY id""")
    assert got == [("a", 30, 50, 5), ("a2", 30, 50, 5), ("b", 20, 40, 0), ("c", 0, 20, 0), ("d", 0, 0, 0),
                   ("e", 20, 20, 0), ("g", 0, 0, 0), ("h", 0, 0, 0), ("n", 5, 5, 0),
                   ("z", 0, 0, 0)]


def test_covered_lengths_equals_clipping_every_interval_to_every_window():
    # the definition, by brute force on many overlapping intervals of three classes and windows
    # that overlap each other: union lengths of the clipped intervals (union_lengths)
    text = """{% from 'templates/intervals.sql' import covered_lengths, union_lengths %}
        WITH iv AS (SELECT 1 AS k, i % 3 AS class, (i * 37) % 1000 AS ts_ns, (i * 37) % 1000 + (i * 11) % 90 - 5 AS end_ns
                    FROM range(400) r(i)),
        w AS (SELECT 1 AS k, j AS id, (j * 53) % 900 AS ts_ns, (j * 53) % 900 + (j * 29) % 200 AS end_ns
              FROM range(40) r(j)),
        clipped AS (SELECT w.id, iv.class, greatest(iv.ts_ns, w.ts_ns) AS ts_ns, least(iv.end_ns, w.end_ns) AS end_ns
                    FROM iv JOIN w ON iv.ts_ns < w.end_ns AND iv.end_ns > w.ts_ns),
        brute AS ({{ union_lengths('clipped', ['id'], sets={'c0': 'class = 0', 'c01': 'class <= 1', 'c12': 'class >= 1'}) }})
        SELECT w.id, coalesce(b.c0, 0), coalesce(b.c01, 0), coalesce(b.c12, 0), c.c0, c.c01, c.c12
        FROM w LEFT JOIN brute b USING (id)
        JOIN ({{ covered_lengths('w', 'iv', ['k'], sets={'c0': [0], 'c01': [0, 1], 'c12': [1, 2]}) }}) c USING (id)"""
    rows = sql(text)
    assert len(rows) == 40 and sum(r[2] for r in rows) > 0
    assert [r[1:4] for r in rows] == [r[4:] for r in rows]


def test_covered_lengths_over_many_partitions_and_vectors():
    # the same definition on five keys (one NULL) of 4,000 intervals each: the sweep passes once over
    # every key's points in order (~40,000 of them, many DuckDB vectors, on several threads), so each
    # key must start from nothing and number its edges apart from the others'
    text = """{% from 'templates/intervals.sql' import covered_lengths, union_lengths %}
        WITH iv AS (SELECT nullif(i % 5, 4) AS k, (i // 5) % 3 AS class, (i * 37) % 100000 AS ts_ns,
                           (i * 37) % 100000 + (i * 11) % 900 - 50 AS end_ns
                    FROM range(20000) r(i)),
        w AS (SELECT nullif(j % 5, 4) AS k, j AS id, (j * 5303) % 90000 AS ts_ns, (j * 5303) % 90000 + (j * 29) % 20000 AS end_ns
              FROM range(200) r(j)),
        clipped AS (SELECT w.id, iv.class, greatest(iv.ts_ns, w.ts_ns) AS ts_ns, least(iv.end_ns, w.end_ns) AS end_ns
                    FROM iv JOIN w ON iv.k IS NOT DISTINCT FROM w.k AND iv.ts_ns < w.end_ns AND iv.end_ns > w.ts_ns),
        brute AS ({{ union_lengths('clipped', ['id'], sets={'c0': 'class = 0', 'c01': 'class <= 1', 'c12': 'class >= 1'}) }})
        SELECT w.id, coalesce(b.c0, 0), coalesce(b.c01, 0), coalesce(b.c12, 0), c.c0, c.c01, c.c12
        FROM w LEFT JOIN brute b USING (id)
        JOIN ({{ covered_lengths('w', 'iv', ['k'], sets={'c0': [0], 'c01': [0, 1], 'c12': [1, 2]}) }}) c USING (id)
        ORDER BY w.id"""
    rows = sql(text)
    assert len(rows) == 200 and sum(r[2] for r in rows) > 0 and sum(1 for r in rows if r[3] == 0) < 20
    assert [r[1:4] for r in rows] == [r[4:] for r in rows]


def test_covered_lengths_are_bigint():
    got = sql("""{% from 'templates/intervals.sql' import covered_lengths %}
        WITH iv(k, class, ts_ns, end_ns) AS (VALUES (1, 0, 0::BIGINT, 4000000000000000000::BIGINT),
                                                   (1, 0, 5000000000000000000::BIGINT, 9000000000000000000::BIGINT)),
        w(k, ts_ns, end_ns) AS (VALUES (1, 0::BIGINT, 9000000000000000000::BIGINT))
        SELECT typeof(busy_ns), busy_ns FROM ({{ covered_lengths('w', 'iv', ['k'], sets={'busy_ns': [0]}) }})""")
    assert got == [("BIGINT", 8000000000000000000)]


# -- overlaps_any ---------------------------------------------------------------------

def test_overlaps_any_is_covered_length_above_zero():
    # intervals [0,10] [20,50] [60,60] (length 0: covers nothing); windows: [5,25] yes;
    # [30,30] no (length 0); [10,20] no (touches both); [50,60] no (touches [20,50] and
    # the point 60); [55,65] no (only the point 60); [45,55] yes; [-5,0] no; [0,1] yes;
    # [49,70] yes ([20,50], although [60,60] starts later); key 2 has no interval
    windows = ("(1, 'a', 5, 25), (1, 'b', 30, 30), (1, 'c', 10, 20), (1, 'd', 50, 60), (1, 'e', 55, 65), "
               "(1, 'f', 45, 55), (1, 'g', -5, 0), (1, 'h', 0, 1), (1, 'i', 49, 70), (2, 'j', 0, 100)")
    got = sql("""{% from 'templates/intervals.sql' import overlaps_any, covered_length %}
        WITH busy(k, start_ns, end_ns) AS (VALUES (1, 0, 10), (1, 20, 50), (1, 60, 60)),
        w(k, id, ts_ns, end_ns) AS (VALUES """ + windows + """)
        SELECT o.id, o.hit, c.covered_ns > 0
        FROM ({{ overlaps_any('w', 'busy', ['k'], name='hit') }}) o
        JOIN ({{ covered_length('w', 'busy', ['k']) }}) c USING (k, id)
        ORDER BY o.id""")
    assert [(i, hit) for i, hit, _ in got] == [
        ("a", True), ("b", False), ("c", False), ("d", False), ("e", False), ("f", True), ("g", False),
        ("h", True), ("i", True), ("j", False)]
    assert all(hit == covered for _, hit, covered in got)


# -- bucket_overlaps ----------------------------------------------------------------

BUCKETED = """{% from 'templates/intervals.sql' import bucket_overlaps %}
    WITH iv(trace_id, k, start_ns, end_ns, v) AS (VALUES
        (1, 'a', 0, 10, 1), (1, 'a', 25, 55, 2), (1, 'b', 40, 40, 7), (1, 'a', 95, 130, 3),
        (1, 'c', -20, -5, 9), (2, 'a', 0, 5, 1)),
    w(trace_id, w0, w1) AS (VALUES (1, 0, 100))
    SELECT k, bucket, n, len, m FROM ({{ bucket_overlaps('iv', 'w', ['trace_id'], ['trace_id', 'k'], 3,
                                                        'count(*) AS n, sum(overlap_ns) AS len, max(v) AS m') }})
    ORDER BY ALL"""


def test_bucket_overlaps_splits_intervals_over_equal_buckets():
    # window [0,100] in 3 buckets: [0,33) [33,66) [66,100] (integer bounds 100*i//3).
    # a: [0,10) -> bucket 0: 10; [25,55) -> bucket 0: 33-25 = 8, bucket 1: 55-33 = 22;
    #    [95,130) -> only its part in the window, bucket 2: 100-95 = 5
    # b: the point 40 -> bucket 1, length 0 (its value still counts: max 7)
    # c: before the window -> nothing; trace 2 has no window -> nothing
    assert sql(BUCKETED) == [("a", 0, 2, 18, 2), ("a", 1, 1, 22, 2), ("a", 2, 1, 5, 3), ("b", 1, 1, 0, 7)]


def test_bucket_overlaps_edges_belong_to_one_bucket():
    # an interval ending exactly at a bucket start adds nothing to that bucket;
    # one starting there belongs to it; 7 buckets of a 10 ns window (widths 1 or 2)
    got = sql("""{% from 'templates/intervals.sql' import bucket_overlaps %}
        WITH iv(t, start_ns, end_ns) AS (VALUES (1, 0, 2), (1, 2, 10)),
        w(t, w0, w1) AS (VALUES (1, 0, 10))
        SELECT bucket, len FROM ({{ bucket_overlaps('iv', 'w', ['t'], ['t'], 7, 'sum(overlap_ns) AS len') }})
        ORDER BY bucket""")
    # bounds 10*i//7: 0 1 2 4 5 7 8 10 -> widths 1 1 2 1 2 1 2: the intervals cover all of it
    assert got == [(0, 1), (1, 1), (2, 2), (3, 1), (4, 2), (5, 1), (6, 2)]


# -- enclosing -----------------------------------------------------------------------

def test_enclosing_pairs_points_with_every_span_around_them():
    # thread 1: spans A [0,100] (depth 0) > B [10,50] (depth 1), C [60,90] (depth 1);
    # thread 2: D [0,100]. Points: p [20,30] -> A, B; q [55,58] -> A only (B ended at 50,
    # C starts at 60); r [60,90] -> A, C (same start and end as C count); s [95,120] ->
    # none (outlives A); t on thread 2 [5,6] -> D; u on thread 3 -> none.
    got = sql("""{% from 'templates/intervals.sql' import enclosing %}
        WITH spans(tid, span_id, depth, ts_ns, end_ns) AS (
                VALUES (1, 'A', 0, 0, 100), (1, 'B', 1, 10, 50), (1, 'C', 1, 60, 90), (2, 'D', 0, 0, 100)),
             points(tid, point_id, ts_ns, end_ns) AS (
                VALUES (1, 'p', 20, 30), (1, 'q', 55, 58), (1, 'r', 60, 90), (1, 's', 95, 120),
                       (2, 't', 5, 6), (3, 'u', 0, 1))
        SELECT point_id, span_id, span_depth FROM ({{ enclosing('points', 'spans', ['tid']) }})
        ORDER BY point_id, span_depth""")
    assert got == [("p", "A", 0), ("p", "B", 1), ("q", "A", 0), ("r", "A", 0), ("r", "C", 1), ("t", "D", 0)]


# -- scope ---------------------------------------------------------------------------

SCOPED = """{% from 'templates/scope.sql' import scope with context %}
    WITH x(trace_id, device) AS (VALUES (1, 0), (1, 1), (2, 0), (3, 1))
    SELECT trace_id, device FROM x WHERE TRUE {{ scope() }} ORDER BY ALL"""


@pytest.mark.parametrize("run,device,want", [
    (None, None, [(1, 0), (1, 1), (2, 0), (3, 1)]),
    ("a", None, [(1, 0), (1, 1), (3, 1)]),
    (None, 0, [(1, 0), (2, 0)]),
    ("a", 1, [(1, 1), (3, 1)]),
])
def test_scope_by_run_and_device(run, device, want):
    params = {k: v for k, v in (("run", run), ("device", device)) if v is not None}
    assert sql(SCOPED, params, run=run, device=device) == want


def test_scope_binds_values_never_pastes_them():
    text = sqlfiles._env().from_string(SCOPED).render(run="x'); DROP TABLE t; --", device=3)
    assert "DROP" not in text and "$run" in text and "$device" in text


# -- op_signature and categories ----------------------------------------------------

def test_op_signature_hashes_the_four_columns():
    got = sql("""{% from 'templates/op_signature.sql' import op_signature %}
        WITH o(op_name, input_dims, input_types, concrete_inputs) AS
            (VALUES ('aten::mm', '[[2,3],[3,4]]'::JSON, '["float","float"]'::JSON, '["",""]'::JSON))
        SELECT {{ op_signature('o.', name='op_name') }}
               = hash('aten::mm', '[[2,3],[3,4]]', '["float","float"]', '["",""]') FROM o""")
    assert got == [(True,)]


def test_category_lists_render_as_sql_lists():
    got = sql("""{% from 'templates/categories.sql' import device_cats, runtime_cats, sql_list %}
        SELECT 'gpu_memset' IN {{ sql_list(device_cats) }}, 'cuda_runtime' IN {{ sql_list(device_cats) }},
               'hip_runtime' IN {{ sql_list(runtime_cats) }}""")
    assert got == [(True, False, True)]
    got = sql("""{% from 'templates/categories.sql' import device_cats, sql_array %}
        SELECT list_contains({{ sql_array(device_cats) }}, 'gpu_memset'),
               list_contains({{ sql_array(device_cats) }}, 'cuda_runtime'), len({{ sql_array(['a', 'b']) }})""")
    assert got == [(True, False, 2)]


# -- rounded (templates/numbers.sql) --------------------------------------------------

def test_rounded_scales_then_rounds_half_away_from_zero():
    # 52.1885 * 1e3 = 52188.5 and 2.675 * 1e2 = 267.5 in binary64, which round away
    # from zero; DuckDB 2.0.1's round(x, n) rounds the binary values (52.18849999...,
    # 2.67499999...) down instead, and 2.0.0's rounded up: the macro is the same on both
    got = sql("""{% from 'templates/numbers.sql' import rounded %}
        SELECT {{ rounded('x', 3) }}, {{ rounded('y', 2) }}, {{ rounded('-y', 2) }}, {{ rounded('z', 2) }},
               {{ rounded('100.0 * 1 / 8', 1) }}, {{ rounded('NULL::DOUBLE', 2) }},
               typeof({{ rounded('100.0 * 1 / 8', 1) }})
        FROM (VALUES (52.1885::DOUBLE, 2.675::DOUBLE, 0.285::DOUBLE)) t(x, y, z)""")
    # 0.285 * 1e2 = 28.499999999999996: down
    assert got == [(52.189, 2.68, -2.68, 0.28, 12.5, None, "DOUBLE")]


def _calls_with_a_second_argument(text: str, fn: str) -> list[str]:
    """The calls fn(a, b...) in text whose parentheses hold a top-level comma."""
    found, at = [], 0
    pattern = re.compile(rf"\b{fn}\(", re.I)
    while m := pattern.search(text, at):
        depth, i, comma = 1, m.end(), False
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            comma |= depth == 1 and text[i] == ","
            i += 1
        if comma:
            found.append(text[m.start():i])
        at = m.end()
    return found


def test_no_sql_file_rounds_to_decimals_with_duckdbs_round():
    # round(x, n) gives different last digits in different DuckDB releases
    # (templates/numbers.sql): reports round to decimals with rounded()
    sql_dir = REPO / "sql"
    offenders = {str(p.relative_to(sql_dir)): calls for p in sorted(sql_dir.rglob("*.sql"))
                 if p.name != "numbers.sql"
                 and (calls := _calls_with_a_second_argument(p.read_text(encoding="utf-8"), "round"))}
    assert not offenders
    assert _calls_with_a_second_argument("SELECT round(a / (b + 1), 2), round(c)", "round") == \
        ["round(a / (b + 1), 2)"]


# -- categorized (templates/categories.sql) --------------------------------------------

def test_categorized_first_matching_rule_wins_else_the_view(tmp_path):
    # names: k_gemm_1 matches rules 2 and 3 -> rule 2 (first in the file); Memcpy HtoD
    # matches rule 1 (case-insensitive); other_kernel matches none -> the view's category
    rules = tmp_path / "rules.csv"
    rules.write_text("pattern,category\nmemcpy htod,copy_in\ngemm,my_gemm\n^k_,k_kernels\n")
    text = """{% from 'templates/categories.sql' import categorized %}
        WITH kernel_categories(kind, name, category) AS (VALUES ('kernel', 'k_gemm_1', 'gemm'),
             ('memcpy', 'Memcpy HtoD (Pinned -> Device)', 'memcpy_htod'), ('kernel', 'other_kernel', 'other'))
        SELECT * FROM ({{ categorized(rules) }}) ORDER BY name"""
    assert sql(text, {"rules": str(rules)}, rules=True) == [
        ("memcpy", "Memcpy HtoD (Pinned -> Device)", "copy_in", True),
        ("kernel", "k_gemm_1", "my_gemm", True),
        ("kernel", "other_kernel", "other", False)]
    assert sql(text, rules=False) == [
        ("memcpy", "Memcpy HtoD (Pinned -> Device)", "memcpy_htod", False),
        ("kernel", "k_gemm_1", "gemm", False),
        ("kernel", "other_kernel", "other", False)]


# -- call_bytes (templates/memory.sql) ----------------------------------------------------

def test_call_bytes_counts_memory_events_in_start_end_inclusive_of_the_calls_process():
    # process 1's memory at t = 10 (+5 CPU), 20 (+7 device), 30 (-5 CPU), 40 (+1 CPU)
    # call a [10, 30]: 5 + 7 - 5 (both ends inclusive) -> cpu 0, dev 7
    # call b [11, 29]: only t = 20 -> cpu 0, dev 7;  call c [31, 39]: nothing -> no row
    # call d [40, 40]: t = 40 -> cpu 1;  trace 2 has no memory -> no row
    # process 2 of trace 1 (another rank merged into the file): +100 device at 20, so its call
    #   f [0, 50] gets 100 and a, b, d still get only process 1's bytes
    # NULL pids are one process: call g [15, 25] and the NULL-pid +3 CPU at 20 -> cpu 3
    # call h ends before it starts [40, 15]: its end's bytes (<= 15: cpu 5) minus its start's (< 40: cpu 0, dev 7)
    got = sql("""{% from 'templates/memory.sql' import call_bytes %}
        WITH calls(trace_id, pid, ts_ns, end_ns, kh, pkh) AS (VALUES
                 (1, 1, 10, 30, 'a', NULL), (1, 1, 11, 29, 'b', 'a'), (1, 1, 31, 39, 'c', NULL),
                 (1, 1, 40, 40, 'd', NULL), (2, 1, 0, 100, 'e', NULL), (1, 2, 0, 50, 'f', NULL),
                 (1, NULL, 15, 25, 'g', NULL), (1, 1, 40, 15, 'h', NULL)),
             mem(trace_id, pid, ts_ns, cpu_b, dev_b) AS (VALUES
                 (1, 1, 10, 5, 0), (1, 1, 20, 0, 7), (1, 1, 30, -5, 0), (1, 1, 40, 1, 0), (1, 2, 20, 0, 100),
                 (1, NULL, 20, 3, 0))
        SELECT * FROM ({{ call_bytes('calls', 'mem') }}) ORDER BY kh""")
    assert got == [(1, "a", None, 0, 7), (1, "b", "a", 0, 7), (1, "d", None, 1, 0), (1, "f", None, 0, 100),
                   (1, "g", None, 3, 0), (1, "h", None, 5, -7)]


def test_op_and_step_innermost_op_on_the_thread_and_the_step():
    # trace 1: ops on pid 1 tid 1: outer [10,40] depth 0, a [12,20] and b [14,18] depth 1;
    #          steps 1 [0,45), 2 [45,100)
    # moment 1 at 15 on tid 1: deepest are a and b, b starts later -> b, step 1
    # moment 2 at 50 on tid 1: no op -> NULL, step 2;  moment 3 at 15 on tid 2: no op there, step 1
    # moment 4 at 200: after the steps -> NULL, NULL;  moment 6 at 40: outer (its end counts), step 1
    # trace 2 (no steps): moment 5 at 15 inside 'other' [0,30] -> other, NULL
    got = sql("""{% from 'templates/memory.sql' import op_and_step %}
        WITH cpu_ops(trace_id, pid, tid, name, depth, ts_ns, end_ns) AS (VALUES
                 (1, 1, 1, 'outer', 0, 10, 40), (1, 1, 1, 'a', 1, 12, 20), (1, 1, 1, 'b', 1, 14, 18),
                 (2, 1, 1, 'other', 0, 0, 30)),
             steps(trace_id, step, ts_ns, end_ns) AS (VALUES (1, 1, 0, 45), (1, 2, 45, 100)),
             moments(trace_id, m_id, pid, tid, ts_ns) AS (VALUES
                 (1, 1, 1, 1, 15), (1, 2, 1, 1, 50), (1, 3, 1, 2, 15), (1, 4, 1, 1, 200), (2, 5, 1, 1, 15),
                 (1, 6, 1, 1, 40))
        SELECT * FROM ({{ op_and_step('moments', 'm_id') }}) ORDER BY m_id""")
    assert got == [(1, 1, "b", 1), (1, 2, None, 2), (1, 3, None, 1), (1, 4, None, None), (2, 5, "other", None),
                   (1, 6, "outer", 1)]


# -- collective_arrivals -------------------------------------------------------------

def test_collective_arrivals_match_by_seq_else_by_type_and_occurrence():
    # run 'a' = traces 1 and 3 (trace_files above); trace 2 is run 'b'.
    # pg 0 seq 7: trace 1 starts at 100 (two kernels: the first counts), trace 3 at 160
    #   -> last = trace 3, trace 1 waited 60, trace 3 waited 0.
    # pg 1 without seq: all_reduce #1 on both (300 vs 250) -> trace 1 last, trace 3 waited 50;
    #   all_reduce #2 only on trace 1 -> left out; trace 2 (run b) alone -> left out;
    #   trace 4 (run a, profiled later: another window, a schedule's next cycle) alone -> left out.
    got = sql("""{% from 'templates/collectives.sql' import collective_arrivals %}
        WITH v(trace_id, ts_ns, process_group, seq, collective, occurrence) AS (VALUES
            (1, 100, '0', 7, 'all_reduce', 1), (1, 130, '0', 7, 'all_reduce', 2), (3, 160, '0', 7, 'all_reduce', 1),
            (1, 300, '1', NULL, 'all_reduce', 1), (3, 250, '1', NULL, 'all_reduce', 1),
            (1, 400, '1', NULL, 'all_reduce', 2), (2, 100, '0', 7, 'all_reduce', 1),
            (4, 2100, '1', NULL, 'all_reduce', 1)),
        src AS (SELECT *, 'ncclKernel_AllReduce' AS name, 'Float' AS dtype, 1000 AS in_nelems FROM v)
        SELECT * FROM ({{ collective_arrivals('src') }}) ORDER BY instance, trace_id""")
    assert got == [("a", "0/seq 7", "0", "all_reduce", 1, 100, 2, 100, 160, 3, 60),
                   ("a", "0/seq 7", "0", "all_reduce", 3, 160, 2, 100, 160, 3, 0),
                   ("a", "1/all_reduce #1", "1", "all_reduce", 1, 300, 2, 250, 300, 1, 0),
                   ("a", "1/all_reduce #1", "1", "all_reduce", 3, 250, 2, 250, 300, 1, 50)]


# -- user_frame (frames.sql) ----------------------------------------------------------

def test_user_frame_innermost_frame_outside_torch():
    # thread (1, 1): main.py [0,100] > torch/nn/modules/module.py [10,90] > model.py [20,80]
    #   > torch/utils/_device.py [30,70] > nn.Module: Linear_0 [31,69]; thread (1, 2): other.py [0,100]
    # call a [40,50] on (1,1): model.py (the torch frames and 'nn.Module' are skipped)
    # call b [12,15] on (1,1): main.py (module.py is torch's); call c [0,100] on (1,2): other.py
    # (a frame equal to the call encloses it); call d [5,6] on (1,3): no frame -> no row
    got = sql("""{% from 'templates/frames.sql' import user_frame %}
        CREATE TABLE python_functions AS SELECT * FROM (VALUES
            (1, 1, 1, 'main.py(3): <module>', 0, 100, 0),
            (1, 1, 1, '/usr/lib/python3/site-packages/torch/nn/modules/module.py(1501): _call_impl', 10, 90, 1),
            (1, 1, 1, 'model.py(42): forward', 20, 80, 2),
            (1, 1, 1, 'torch/utils/_device.py(104): __torch_function__', 30, 70, 3),
            (1, 1, 1, 'nn.Module: Linear_0', 31, 69, 4),
            (1, 1, 2, 'other.py(7): run', 0, 100, 0)) t(trace_id, pid, tid, name, ts_ns, end_ns, depth);
        WITH calls(trace_id, id, pid, tid, ts_ns, end_ns) AS (
            VALUES (1, 'a', 1, 1, 40, 50), (1, 'b', 1, 1, 12, 15), (1, 'c', 1, 2, 0, 100), (1, 'd', 1, 3, 5, 6))
        SELECT * FROM ({{ user_frame('calls', ['trace_id', 'id']) }}) ORDER BY id""")
    assert got == [(1, "a", "model.py(42): forward"), (1, "b", "main.py(3): <module>"), (1, "c", "other.py(7): run")]
