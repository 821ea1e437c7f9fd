-- diff_sides: what sides A and B of a diff are: one row per side.
--
-- Parameters: run_a, run_b (run labels). Template: qa, qb (catalog prefix of each side).
-- requires: trace_files, gpu_ops, gpu_devices, steps
--
-- Columns:
-- side     VARCHAR  'A' or 'B'
-- run      VARCHAR  run label
-- traces   BIGINT   trace files in the run
-- ranks    VARCHAR  their ranks, comma-separated (NULL when unknown)
-- steps    BIGINT   distinct ProfilerStep#N numbers in the run (0: none)
-- devices  VARCHAR  the GPUs with device activity, e.g. 'Tesla V100-DGXS-32GB x4'
--                   (deviceProperties name: the device's own entry or, for a device without
--                   one, the trace's only model (gpu_devices); else the datasheet model its memory
--                   and CUs matched; else 'device N'; 'x4': on 4 (trace, device) pairs)
-- paths    VARCHAR  the trace files, ' | '-separated

{%- macro side(q, s, label) %}
    WITH scope AS (SELECT trace_id, rank, path FROM {{ q }}trace_files WHERE run = $run_{{ s }}),
    used AS (
        SELECT DISTINCT g.trace_id, g.device
        FROM {{ q }}gpu_ops g
        WHERE g.trace_id IN (SELECT trace_id FROM scope)
    ),
    named AS (
        SELECT coalesce(nullif(d.device_name, ''), d.peak_device,
                        'device ' || coalesce(u.device::VARCHAR, '?')) AS dev_name,
               count(*) AS n
        FROM used u
        LEFT JOIN {{ q }}gpu_devices d ON d.trace_id = u.trace_id AND d.device = u.device
        GROUP BY 1
    )
    SELECT '{{ label }}' AS side, $run_{{ s }} AS run,
           (SELECT count(*) FROM scope) AS traces,
           (SELECT string_agg(DISTINCT rank::VARCHAR, ',' ORDER BY rank::VARCHAR) FROM scope) AS ranks,
           (SELECT count(DISTINCT step) FROM {{ q }}steps WHERE trace_id IN (SELECT trace_id FROM scope)) AS steps,
           (SELECT string_agg(dev_name || CASE WHEN n > 1 THEN ' x' || n ELSE '' END, ', ' ORDER BY dev_name)
            FROM named) AS devices,
           (SELECT string_agg(path, ' | ' ORDER BY path) FROM scope) AS paths
{%- endmacro %}

SELECT * FROM ({{ side(qa, 'a', 'A') }})
UNION ALL
SELECT * FROM ({{ side(qb, 'b', 'B') }})
ORDER BY side
