-- Which traces of a batch have fractional absolute timestamps beyond 2^43 us,
-- where a double is coarser than 1 ns and exact_ts.sql must read ts from the
-- text. Template: raws (the batch's staged views, in order). Parameter: base_ns
-- (BIGINT[], one per view; 0 when ts is absolute: only those can need it).
-- Returns src (INTEGER): positions in raws, from 0.
{%- for raw in raws %}
{% if not loop.first %}UNION ALL {% endif %}SELECT {{ loop.index0 }} AS src
FROM (SELECT 1 FROM {{ raw }}
      WHERE CAST($base_ns AS BIGINT[])[{{ loop.index }}] = 0
        AND abs(ts) >= 8796093022208 AND ts <> floor(ts) LIMIT 1)
{%- endfor %}
