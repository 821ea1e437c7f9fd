"""Where a running command is, for tests that act on a real process at a
chosen moment without guessing with sleeps.

With DUCKPROF_PHASE_FILE set, duckprof appends the name of each phase of a
load ("reading", "parsing", "nesting", "locking", "inserting", "committing",
"committed", "checkpoint", "done"), and "waiting for lock" when it waits
for another process's lock, to that file as the phase starts. With
DUCKPROF_PHASE_PAUSE=<phase>[,<phase>...] as well, it stops when such a phase
starts until the file <DUCKPROF_PHASE_FILE>.go exists (a test fills the disk
there, say), and removes it, so that the next phase named stops again.
Unset, nothing happens.
"""

from __future__ import annotations

import os
import time

FILE_ENV = "DUCKPROF_PHASE_FILE"
PAUSE_ENV = "DUCKPROF_PHASE_PAUSE"


def mark(name: str):
    path = os.environ.get(FILE_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(name + "\n")
    if name in os.environ.get(PAUSE_ENV, "").split(","):
        go = path + ".go"
        while not os.path.exists(go):
            time.sleep(0.01)
        os.remove(go)
