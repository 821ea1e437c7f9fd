-- numbers: rounding a report's figures, written once.
--   from "templates/numbers.sql" import rounded
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
