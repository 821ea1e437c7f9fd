"""The test suite's CPU per test and per module (a pytest plugin).

    SUITE_CPU_OUT=DIR PYTHONPATH=benchmarks python -m pytest -p suite_cpu -q -n 2 -p no:cacheprovider
    python benchmarks/suite_cpu.py DIR [DIR2]      # per module (DIR2: a second run, side by side)

Each process (every xdist worker, or pytest alone) writes DIR/<worker>.jsonl:
one line per test with the CPU-s (user + sys, the process's threads and the
children it has waited for) its setup, call and teardown took and its outcome
(passed, or the first phase's failed / skipped), so a module- or
session-scoped fixture counts where it is built and torn down; and one line
'process' with the process's whole CPU, the rest of which is start-up and
collection.
"""
from __future__ import annotations

import json
import os
import resource
import sys

import pytest


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


class _Recorder:
    def __init__(self, out):
        os.makedirs(out, exist_ok=True)
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.f = open(os.path.join(out, f"{name}.jsonl"), "w")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        t0, self.outcome = _cpu(), "passed"
        yield
        self.f.write(json.dumps({"test": item.nodeid, "cpu": _cpu() - t0, "outcome": self.outcome}) + "\n")

    def pytest_runtest_logreport(self, report):
        if report.outcome != "passed" and self.outcome == "passed":  # a phase's failure or skip
            self.outcome = report.outcome

    def pytest_unconfigure(self, config):
        self.f.write(json.dumps({"process": _cpu()}) + "\n")
        self.f.close()


def pytest_configure(config):
    out = os.environ.get("SUITE_CPU_OUT")
    # the xdist controller runs no tests; its CPU is in /usr/bin/time's total
    if out and (os.environ.get("PYTEST_XDIST_WORKER") or not config.getoption("numprocesses", None)):
        config.pluginmanager.register(_Recorder(out), "suite_cpu_recorder")


def _read(d):
    tests, procs, outcomes = {}, [], {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            for line in f:
                r = json.loads(line)
                if "test" in r:
                    tests[r["test"]] = r["cpu"]
                    outcomes[r["test"]] = r.get("outcome", "passed")
                else:
                    procs.append(r["process"])
    return tests, procs, outcomes


def _modules(tests):
    mods = {}
    for t, c in tests.items():
        m = mods.setdefault(t.split("::")[0], [0, 0.0])
        m[0] += 1
        m[1] += c
    return mods


def main(dirs):
    runs = [_read(d) for d in dirs]
    mods = [_modules(t) for t, _, _ in runs]
    names = sorted(set().union(*mods), key=lambda m: -mods[0].get(m, [0, 0])[1])
    head = " | ".join(f"tests | CPU-s ({os.path.basename(d.rstrip('/'))})" for d in dirs)
    print(f"| module | {head} |")
    print("|---|" + "---|---|" * len(dirs))
    for m in names:
        print(f"| {m.removeprefix('tests/')} | " + " | ".join(
            f"{r.get(m, [0, 0])[0]} | {r.get(m, [0, 0.0])[1]:.1f}" for r in mods) + " |")
    for (tests, procs, outcomes), d in zip(runs, dirs):
        in_tests = sum(tests.values())
        print(f"{d}: {len(tests)} tests {in_tests:.1f} CPU-s in tests, "
              f"workers {sum(procs):.1f} CPU-s (start-up + collection {sum(procs) - in_tests:.1f})")
        for t, c in sorted(tests.items(), key=lambda kv: -kv[1])[:40]:
            print(f"  {c:6.2f}  {t}")
        for t, o in sorted(outcomes.items()):
            if o != "passed":
                print(f"  {o}: {t}")


if __name__ == "__main__":
    main(sys.argv[1:])
