"""The CTEs the pattern rules share (reports.SHARED_CTES): each rule declares in
its header (`shared:`) the ones it reads; two or more chosen rules that
declare one read it computed once, and find what they find alone."""

from __future__ import annotations

import dataclasses
import re

import pytest

from conftest import slow_when

from duckprof import reports, sqlfiles

PATTERNS = reports.lookup("patterns")


def defaults(**more) -> dict:
    return {o.name: o.default for o in PATTERNS.options()} | more


@pytest.mark.parametrize("rule", reports.rules_of(PATTERNS), ids=lambda r: r.name)
def test_each_rule_declares_the_shared_ctes_it_reads(rule):
    """Rendered as when every shared CTE is computed for it, a rule reads
    exactly the CTEs its header declares (a rule that read one without
    declaring it would find no such table when run with another)."""
    text = re.sub(r"--[^\n]*", "", sqlfiles.render(rule.header.path, **defaults(run="r"),
                                                    shared_ctes=list(reports.SHARED_CTES)))
    reads = {n for n in reports.SHARED_CTES if re.search(rf"\b(?:FROM|JOIN)\s+{n}\b", text, re.I)}
    assert reads == set(reports.rule_ctes(rule))


def test_an_unknown_shared_cte_is_refused():
    rule = reports.rules_of(PATTERNS)[0]
    fake = reports.Rule(dataclasses.replace(rule.header, fields=rule.header.fields | {"shared": "launched, nope"}))
    with pytest.raises(ValueError, match="shared: nope is not one of the shared CTEs"):
        reports.rule_ctes(fake)


def test_the_runner_shares_what_two_rules_declare():
    values = defaults(run="r")
    ctes = reports._shared_ctes(reports.chosen_rules(PATTERNS, "launch-bound,tiny-memcpy,fp32-matmul"), values)
    assert list(ctes) == ["launched"] and "host_events" in ctes["launched"]
    ctes = reports._shared_ctes(reports.chosen_rules(PATTERNS, "fp16-matmul-dims,fp32-matmul,gpu-idle"), values)
    assert list(ctes) == ["matmuls"]
    rules = reports.rules_of(PATTERNS)
    text = reports._shared_views(PATTERNS, rules, values, reports._shared_ctes(rules, values))
    for name in ("device_idle", "launched", "matmuls"):
        assert f"{name} AS MATERIALIZED (" in text


LAUNCHED = ["comm-overlap", "gpu-idle", "launch-bound", "pageable-memcpy", "tiny-memcpy"]
IDLE = ["gpu-idle", "sync"]


@pytest.fixture(scope="module")
def gpu(gpu_patterns):
    """fixtures/patterns/gpu/<rule>_yes.json of each rule as run <rule>_yes (conftest)."""
    return gpu_patterns


def hits(s, run, only) -> list[tuple]:
    """The rules' matches (the runner's temp table of hits: every rule column)."""
    values = defaults(run=run, only=only)
    reports._run_rules(s.con, PATTERNS, values, values, "t_shared", need_hits=True)
    return s.con.sql("SELECT * FROM t_shared_hits").fetchall()


#: the quick run checks one rule that shares the launch calls, the full run every one
@pytest.mark.parametrize("run", slow_when([r.replace("-", "_") for r in LAUNCHED], lambda r: r != "launch_bound"))
def test_rules_sharing_the_launch_calls_find_what_they_find_alone(gpu, run):
    """The rules that read device events with their launch calls, run together
    (the calls joined once: CTE launched) and alone (each joins its own rows):
    the same matches, with the same call columns (pid, tid, host time, op)."""
    run = f"{run}_yes"  # fixtures/patterns/gpu/<run>_yes.json
    together = hits(gpu, run, ",".join(LAUNCHED))
    alone = [row for rule in LAUNCHED for row in hits(gpu, run, rule)]
    assert together and sorted(together, key=repr) == sorted(alone, key=repr)
    pid, op = [c for c, _ in reports.RULE_COLUMNS].index("pid") + 1, \
        [c for c, _ in reports.RULE_COLUMNS].index("op_event_id") + 1
    assert any(r[pid] is not None and r[op] is not None for r in together)  # the calls were found


@pytest.mark.parametrize("only", slow_when(["gpu-idle", "sync", "gpu-idle,sync"], {"gpu-idle", "sync"}))  # quick: both
def test_the_device_gaps_from_the_pages_busy_intervals_are_the_same(gpu, only):
    """On the page's connection, which holds gpu_busy_intervals computed, the
    rules reading the device idle gaps take them from it (render variable
    materialized) instead of merging the device events again: the same
    matches, alone and shared."""
    from duckprof.html import page
    text = sqlfiles.render("reports/patterns/gpu_idle.sql", **defaults(run="r"), materialized=["gpu_busy_intervals"])
    assert "FROM gpu_busy_intervals WHERE scope = 'device'" in text and "max(end_ns) OVER" not in text
    con = page.page_connection(gpu)
    try:
        found = 0
        for run in ("gpu_idle_yes", "sync_yes"):
            cols = "rule, trace_id, count, at_stake_us, detail, source, step, examples"
            plain = reports.run(gpu.con, "patterns", run=run, only=only).relation.select(cols).fetchall()
            paged = reports.run(con, "patterns", run=run, only=only,
                                materialized=page.shared_names()).relation.select(cols).fetchall()
            assert paged == plain
            found += sum(r[2] or 0 for r in plain)
        assert found
    finally:
        con.close()
