-- numbers: rounding a report's figures, and a time-weighted mean, written once.
--   from "templates/numbers.sql" import rounded, weighted_mean
-- rounded(expr, digits): expr (a DOUBLE or DECIMAL expression) to `digits`
--   decimals, half away from zero after scaling: round(expr * 10^digits) /
--   10^digits, a DOUBLE (NULL stays NULL). DuckDB's own round(x, digits)
--   gives different last digits in different releases for values whose
--   scaled double ends in .5 (2.0.0: round(52.1885, 3) = 52.189; 2.0.1:
--   52.188, the binary value being just below the half), so reports that
--   rounded with it printed different numbers for the same trace depending
--   on the installed DuckDB. round() to a whole number did not change.
{% macro rounded(expr, digits) -%}
(round(({{ expr }}) * 1e{{ digits }}) / 1e{{ digits }})
{%- endmacro %}


-- weighted_mean(x, w): an aggregate: the mean of x weighted by w (default the
--   row's duration, dur_ns) over the rows where x is known; NULL when their
--   weights sum to 0 (every such row took 0 ns).
{% macro weighted_mean(x, w='dur_ns') -%}
(sum({{ w }} * {{ x }}) / nullif(sum({{ w }}) FILTER (WHERE {{ x }} IS NOT NULL), 0))
{%- endmacro %}
