-- intervals: interval logic written once (as Perfetto's intervals module).
-- Each macro renders one SELECT (use it as a subquery or after WITH x AS).
-- src, windows, intervals: relations (a CTE or view name, or a subquery in
-- parentheses); keys: the partition columns as a list, e.g. ['trace_id', 'device']
-- (NULL keys form a partition of their own); s, e: the start and end columns.
-- Tested alone on inline data in tests/test_sql_macros.py.
--
-- merged_intervals(src, keys, s, e, order, firsts, count): the union of the
--   intervals of each partition as rows: keys, interval_no (1, 2, ... in time
--   order), start_ns, end_ns, dur_ns, plus `firsts` (a dict: column name ->
--   SQL text over src's columns, taken from the row that opens the merged
--   interval) and, when `count` names it, a column counting its rows. Sorted
--   by start (then `order`), an interval starts a new merged interval when it
--   starts strictly after every earlier one ended, so touching intervals merge
--   (HTA's merge_kernel_intervals). One sort and no GROUP BY: the opening rows
--   alone, each ending where the running maximum of the ends stands at the
--   next opening row (or at the partition's last row); an opening row that
--   ends before it starts (or has no start or end) is alone in its interval
--   and ends where it ends.
-- union_lengths(src, keys, sets, s, e, order, open_negative): the length of
--   the union of each partition's intervals, one column per named subset:
--   sets maps a column name to a predicate on src's rows (none: every row).
--   One sorted pass: each interval adds the part of it that ends after every
--   earlier interval of its set ended. Intervals ending before they start add
--   nothing, unless open_negative: then one that opens a group adds its
--   (negative) length, as HTA does with times rounded to whole us.
-- covered_length(windows, intervals, keys, ws, we): windows with one more
--   column, covered_ns: how much of [ws, we] the intervals cover. intervals
--   must be disjoint (merged_intervals' output: keys, start_ns, end_ns).
--   Cumulative sums (computed once) looked up by two ASOF joins: no join of
--   every window with every interval.
-- covered_lengths(windows, intervals, keys, sets, cls, s, e, ws, we): windows
--   with one more column per named set: how much of [ws, we] the union of the
--   set's intervals covers. intervals: keys, s, e and cls, a class number
--   0..30; sets maps a column name to the list of classes it unites (e.g.
--   {'u1': [1], 'u2': [1, 2]}: nested priorities). Windows may overlap; a
--   window matches the intervals of its keys (by IS NOT DISTINCT FROM); one
--   with a NULL end covers 0. No
--   join of every window with every interval and one sort for every set:
--   each class's intervals are cut into disjoint pieces (the part of each
--   after every earlier one of its class ended, as union_lengths counts),
--   then one sweep over the pieces' ends and the windows' edges gives, between
--   consecutive points, the classes running (a bit each) and the edges passed;
--   per set, the lengths summed between consecutive edges and accumulated
--   over the edges give the covered length at each edge.
-- overlaps_any(windows, intervals, keys, ws, we, name): windows with one more
--   BOOLEAN column `name` (default overlaps): whether [ws, we] and one of the
--   intervals share a stretch of positive length (covered_length > 0), from
--   one ASOF join instead of two: the last interval starting before we is the
--   only one that can. intervals must be disjoint with touching ones merged
--   (merged_intervals' output); those of length 0 are ignored (they cover
--   nothing).
-- bucket_overlaps(intervals, windows, wkeys, keys, n, aggregates, s, e): each
--   window (wkeys, w0, w1) cut into n buckets of equal length (integer bounds:
--   bucket i is [w0 + (w1 - w0) * i // n, w0 + (w1 - w0) * (i + 1) // n)),
--   and per interval key and bucket (keys, bucket) the `aggregates` (SQL text)
--   over the intervals meeting the bucket, each with overlap_ns: how much of it
--   lies in the bucket (0 for an interval of length 0 at a point inside it).
--   Intervals are joined to their window on wkeys (one window per wkeys);
--   each is split over the buckets it spans (found by arithmetic on its ends),
--   so there is no sort and no join of every bucket with every interval.
--   Buckets no interval meets have no row.
-- capped_level_length(src, keys, weight, cap, s, e): per partition, the time
--   integral of min(cap, the summed `weight` of the intervals running), as
--   `level_ns` (DOUBLE, weight x ns): TensorBoard's est. SM efficiency sums the
--   running kernels' blocks per SM, capped at 1. One sort of the starts (+weight)
--   and ends (-weight); at equal times the last row holds every edge's sum, the
--   earlier ones span 0 ns. Rows of NULL weight count for nothing.
-- enclosing(points, spans, keys): every (point, span) pair, on the same keys,
--   where the span holds the point (span start <= point start, span end >=
--   point end). points: keys, point_id, ts_ns, end_ns; spans: keys, span_id,
--   depth, ts_ns, end_ns, where spans of one depth never overlap (host events
--   of a thread at one nesting depth). Rows: keys, point_id, span_id,
--   span_depth. Not a join of every point with
--   every span of its thread: per depth, the spans and the points in one sort,
--   each point taking the last span that started at or before it.

{% macro _partition(keys) -%}
PARTITION BY {{ keys | join(', ') }}
{%- endmacro %}

{% macro merged_intervals(src, keys, s='ts_ns', e='end_ns', order=[], firsts={}, count='') -%}
SELECT {{ keys | join(', ') }}, interval_no, start_ns, end_ns, end_ns - start_ns AS dur_ns
       {%- for col in firsts %}, {{ col }}{% endfor %}{% if count %}, {{ count }}{% endif %}
FROM (
    SELECT {{ keys | join(', ') }}, row_number() OVER mi_opens AS interval_no, {{ s }} AS start_ns,
           CASE WHEN {{ s }} IS NULL OR {{ e }} IS NULL OR {{ e }} < {{ s }} THEN {{ e }}
                ELSE coalesce(lead(mi_before) OVER mi_opens, mi_last) END AS end_ns
           {%- for col, expr in firsts.items() %}, {{ expr }} AS {{ col }}{% endfor %}
           {%- if count %}, coalesce(lead(mi_row) OVER mi_opens, mi_rows + 1) - mi_row AS {{ count }}{% endif %}
    FROM (
        SELECT *, max({{ e }}) OVER (mi_w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS mi_before,
               max({{ e }}) OVER (mi_w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS mi_last,
               row_number() OVER mi_w AS mi_row
               {%- if count %},
               count(*) OVER (mi_w ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS mi_rows
               {%- endif %}
        FROM {{ src }}
        WINDOW mi_w AS ({{ _partition(keys) }} ORDER BY {{ ([s] + order) | join(', ') }})
    )
    WHERE coalesce({{ s }} > mi_before, true)
    WINDOW mi_opens AS ({{ _partition(keys) }} ORDER BY mi_row)
)
{%- endmacro %}

{% macro union_lengths(src, keys, sets={'busy_ns': none}, s='ts_ns', e='end_ns', order=[], open_negative=false) -%}
SELECT {{ keys | join(', ') }}
{%- for col, pred in sets.items() %},
       coalesce(sum(CASE WHEN prev_{{ loop.index }} IS NULL OR {{ s }} > prev_{{ loop.index }}
                         THEN {% if open_negative %}{{ e }} - {{ s }}{% else %}greatest({{ e }} - {{ s }}, 0){% endif %}
                         ELSE greatest({{ e }} - prev_{{ loop.index }}, 0) END)
                {%- if pred %} FILTER (WHERE {{ pred }}){% endif %}, 0)::BIGINT AS {{ col }}
{%- endfor %}
FROM (
    SELECT *
    {%- for col, pred in sets.items() %},
           max({{ e }}){% if pred %} FILTER (WHERE {{ pred }}){% endif %} OVER w AS prev_{{ loop.index }}
    {%- endfor %}
    FROM {{ src }}
    WINDOW w AS ({{ _partition(keys) }} ORDER BY {{ ([s] + order) | join(', ') }}
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
)
GROUP BY {{ keys | join(', ') }}
{%- endmacro %}

{% macro capped_level_length(src, keys, weight, cap=1.0, s='ts_ns', e='end_ns') -%}
SELECT {{ keys | join(', ') }}, sum(greatest(least(level, {{ cap }}), 0.0) * (next_t - t)) AS level_ns
FROM (SELECT *, sum(d) OVER ({{ _partition(keys) }} ORDER BY t ROWS UNBOUNDED PRECEDING) AS level,
             lead(t) OVER ({{ _partition(keys) }} ORDER BY t) AS next_t
      FROM (SELECT {{ keys | join(', ') }}, {{ s }} AS t, {{ weight }} AS d FROM {{ src }} WHERE {{ weight }} IS NOT NULL
            UNION ALL
            SELECT {{ keys | join(', ') }}, {{ e }}, -({{ weight }}) FROM {{ src }} WHERE {{ weight }} IS NOT NULL))
WHERE next_t > t
GROUP BY {{ keys | join(', ') }}
{%- endmacro %}

{% macro covered_length(windows, intervals, keys, ws='ts_ns', we='end_ns') -%}
WITH covered_cum AS (  -- each interval with the length of those before it
    SELECT {{ keys | join(', ') }}, start_ns, end_ns,
           coalesce(sum(end_ns - start_ns) OVER ({{ _partition(keys) }} ORDER BY start_ns
                                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before_ns
    FROM {{ intervals }}
)
SELECT w.*,
       coalesce(ce.before_ns + least(w.{{ we }}, ce.end_ns) - ce.start_ns, 0)
     - coalesce(cs.before_ns + least(w.{{ ws }}, cs.end_ns) - cs.start_ns, 0) AS covered_ns
FROM {{ windows }} w
ASOF LEFT JOIN covered_cum cs ON {% for k in keys %}cs.{{ k }} = w.{{ k }} AND {% endfor %}w.{{ ws }} >= cs.start_ns
ASOF LEFT JOIN covered_cum ce ON {% for k in keys %}ce.{{ k }} = w.{{ k }} AND {% endfor %}w.{{ we }} >= ce.start_ns
{%- endmacro %}

{% macro _class_mask(classes) -%}
{%- set m = namespace(v=0) %}{% for c in classes %}{% set m.v = m.v + 2 ** c %}{% endfor %}{{ m.v }}
{%- endmacro %}

{% macro _same_keys(a, b, keys) -%}
{% for k in keys %}{{ 'AND ' if not loop.first }}{{ a }}.{{ k }} IS NOT DISTINCT FROM {{ b }}.{{ k }} {% endfor %}
{%- endmacro %}

{% macro covered_lengths(windows, intervals, keys, sets, cls='class', s='ts_ns', e='end_ns', ws='ts_ns', we='end_ns') -%}
WITH cover_pieces AS (  -- per class, the part of each interval after every earlier one ended: disjoint
    SELECT {{ keys | join(', ') }}, cls, greatest({{ s }}, coalesce(before_ns, {{ s }})) AS p0, {{ e }} AS p1
    FROM (
        SELECT {{ keys | join(', ') }}, {{ cls }} AS cls, {{ s }}, {{ e }},
               max({{ e }}) OVER ({{ _partition(keys) }}, {{ cls }} ORDER BY {{ s }}
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_ns
        FROM {{ intervals }}
    )
    WHERE {{ e }} > greatest({{ s }}, coalesce(before_ns, {{ s }}))
),
cover_edges AS (  -- the windows' distinct edges, numbered in time order
    SELECT *, row_number() OVER ({{ _partition(keys) }} ORDER BY t) AS edge_no
    FROM (SELECT {{ keys | join(', ') }}, {{ ws }} AS t FROM {{ windows }}
          UNION
          SELECT {{ keys | join(', ') }}, {{ we }} FROM {{ windows }})
    WHERE t IS NOT NULL
),
cover_gaps AS (  -- per gap between two edges (edge_no: the one before it), each set's covered length
    SELECT {{ keys | join(', ') }}, running >> 32 AS edge_no
    {%- for col, classes in sets.items() %},
           sum(len) FILTER (WHERE running & {{ _class_mask(classes) }} <> 0)::BIGINT AS {{ col }}
    {%- endfor %}
    FROM (
        -- the sweep, from each point to the next: running holds the classes
        -- running (a bit each; each class's pieces are disjoint) in bits 0-30
        -- and the number of edges passed from bit 32 up
        SELECT {{ keys | join(', ') }}, sum(bit) OVER w AS running, lead(t) OVER w - t AS len
        FROM (
            SELECT {{ keys | join(', ') }}, unnest([p0, p1]) AS t, unnest([1, -1]) * (1::BIGINT << cls) AS bit
            FROM cover_pieces
            UNION ALL
            SELECT {{ keys | join(', ') }}, t, 1::BIGINT << 32 FROM cover_edges
        )
        WINDOW w AS ({{ _partition(keys) }} ORDER BY t)  -- sums over a point's peers too: order among them is moot
    )
    WHERE len > 0 AND running & {{ 2 ** 31 - 1 }} <> 0
    GROUP BY ALL
),
cover_at AS (  -- at each edge, each set's covered length since the first edge
    SELECT c.*
    {%- for col in sets %},
           coalesce(sum(g.{{ col }}) OVER w, 0)::BIGINT AS {{ col }}
    {%- endfor %}
    FROM cover_edges c
    LEFT JOIN cover_gaps g ON {{ _same_keys('g', 'c', keys) }} AND g.edge_no = c.edge_no
    WINDOW w AS ({% for k in keys %}{{ 'PARTITION BY ' if loop.first else ', ' }}c.{{ k }}{% endfor %} ORDER BY c.edge_no
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
)
SELECT w.*
{%- for col in sets %}, coalesce(ae.{{ col }} - a0.{{ col }}, 0) AS {{ col }}{% endfor %}
FROM {{ windows }} w
LEFT JOIN cover_at a0 ON {{ _same_keys('a0', 'w', keys) }} AND a0.t = w.{{ ws }}
LEFT JOIN cover_at ae ON {{ _same_keys('ae', 'w', keys) }} AND ae.t = w.{{ we }}
{%- endmacro %}

{% macro overlaps_any(windows, intervals, keys, ws='ts_ns', we='end_ns', name='overlaps') -%}
SELECT w.*, coalesce(iv.start_ns < w.{{ we }} AND iv.end_ns > w.{{ ws }} AND w.{{ we }} > w.{{ ws }}, false)
           AS {{ name }}
FROM {{ windows }} w
ASOF LEFT JOIN (SELECT {{ keys | join(', ') }}, start_ns, end_ns FROM {{ intervals }} WHERE end_ns > start_ns) iv
  ON {% for k in keys %}iv.{{ k }} = w.{{ k }} AND {% endfor %}w.{{ we }} > iv.start_ns
{%- endmacro %}

{#- bucket_bound(i, n, w0, w1): where bucket i of n starts, w0 + (w1 - w0) * i // n, written
    (w1 - w0) // n * i + (w1 - w0) % n * i // n: the same integer, without the product that
    overflows BIGINT when a stray event (a ts of 0 or -1 among epoch timestamps) stretches
    the window to 1.7e18 ns -#}
{% macro bucket_bound(i, n, w0='w0', w1='w1') -%}
{{ w0 }} + ({{ w1 }} - {{ w0 }}) // {{ n }} * ({{ i }}) + ({{ w1 }} - {{ w0 }}) % {{ n }} * ({{ i }}) // {{ n }}
{%- endmacro %}

{#- _bucket_of(t, n): the bucket holding t; in HUGEINT only for a window too long for BIGINT's
    product (DuckDB runs a CASE branch on its own rows only) -#}
{% macro _bucket_of(t, n) -%}
least(greatest(CASE WHEN w1 - w0 < 9223372036854775807 // ({{ n }}) - 1
                    THEN (({{ t }} - w0 + 1) * {{ n }} - 1) // nullif(w1 - w0, 0)
                    ELSE ((({{ t }} - w0 + 1)::HUGEINT * {{ n }} - 1) // nullif(w1 - w0, 0))::BIGINT END,
               0), {{ n }} - 1)
{%- endmacro %}

{% macro bucket_overlaps(intervals, windows, wkeys, keys, n, aggregates, s='start_ns', e='end_ns') -%}
SELECT {{ keys | join(', ') }}, bucket, {{ aggregates }}
FROM (
    SELECT *, greatest(least({{ e }}, {{ bucket_bound('bucket + 1', n) }})
                       - greatest({{ s }}, {{ bucket_bound('bucket', n) }}), 0) AS overlap_ns
    FROM (
        SELECT *, unnest(range({{ _bucket_of('greatest(' ~ s ~ ', w0)', n) }},
                               {{ _bucket_of('least(greatest(' ~ e ~ ' - 1, ' ~ s ~ '), w1)', n) }} + 1)) AS bucket
        FROM (
            SELECT i.*, w.w0, w.w1
            FROM {{ intervals }} i
            JOIN {{ windows }} w ON {% for k in wkeys %}{{ 'AND ' if not loop.first }}w.{{ k }} = i.{{ k }} {% endfor %}
            WHERE i.{{ e }} >= w.w0 AND i.{{ s }} <= w.w1
        )
    )
)
GROUP BY {{ keys | join(', ') }}, bucket
{%- endmacro %}

{% macro enclosing(points, spans, keys) -%}
SELECT {{ keys | join(', ') }}, point_id, span_id, depth AS span_depth
FROM (
    SELECT *, last_value(s_id IGNORE NULLS) OVER w AS span_id, last_value(s_end IGNORE NULLS) OVER w AS span_end
    FROM (
        SELECT {% for k in keys %}p.{{ k }}, {% endfor %}d.depth, p.ts_ns, 1 AS is_point, p.point_id, p.end_ns,
               NULL AS s_id, NULL AS s_end
        FROM {{ points }} p
        JOIN (SELECT DISTINCT {{ keys | join(', ') }}, depth FROM {{ spans }}) d USING ({{ keys | join(', ') }})
        UNION ALL
        SELECT {% for k in keys %}{{ k }}, {% endfor %}depth, ts_ns, 0, NULL, NULL, span_id, end_ns
        FROM {{ spans }}
    )
    WINDOW w AS (PARTITION BY {{ keys | join(', ') }}, depth ORDER BY ts_ns, is_point ROWS UNBOUNDED PRECEDING)
)
WHERE is_point = 1 AND span_end >= end_ns
{%- endmacro %}
