"""Reproduce: a state reached by legal operations does not pickle.

Moves could nest a file 254 levels deep (each move's own paths are short), and then
``pickle.dumps``/``copy.deepcopy`` raised ``SandboxError('longer than 1024
characters')``: pickling re-creates every file through the path checks that
``move`` did not apply to what it moved.

    python tests/file_ops/repro_pickle_depth.py   # exit status 0: fixed, 1: reproduced
"""

from __future__ import annotations

import copy
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _repro_util import main, nest_by_moves  # noqa: E402

from tepa_envs.file_ops.sandbox import MAX_DEPTH, MAX_PATH_CHARS, Sandbox, SandboxError  # noqa: E402


def _round_trips(sandbox: Sandbox, label: str) -> list[str]:
    problems = []
    for how, clone in (("pickle", lambda s: pickle.loads(pickle.dumps(s))), ("deepcopy", copy.deepcopy)):
        try:
            copied = clone(sandbox)
        except Exception as exc:  # noqa: BLE001 - the report
            problems.append(f"{label}: {how} raised {type(exc).__name__}: {exc}")
            continue
        try:
            same = all(copied.read_bytes("/".join(p)) == sandbox.read_bytes("/".join(p)) for p in sandbox._sizes)
            if not same or (copied.bytes_used, copied.files_used) != (sandbox.bytes_used, sandbox.files_used):
                problems.append(f"{label}: the {how} copy differs")
        finally:
            copied.close()
    return problems


def reproduce(parent_dir: str) -> list[str]:
    problems: list[str] = []
    sandbox = Sandbox(parent_dir=parent_dir)
    sandbox.reset()
    try:
        reached, refusal = nest_by_moves(sandbox, 300)
        if reached > MAX_DEPTH:
            problems.append(f"legal moves nested a file {reached} levels deep (limit {MAX_DEPTH})")
        if refusal is not None and not refusal.startswith("SandboxError"):
            problems.append(f"the deepening move failed with {refusal}")
        problems += _round_trips(sandbox, f"after nesting {reached} levels by moves")
    finally:
        sandbox.close()

    sandbox = Sandbox(parent_dir=parent_dir)
    sandbox.reset()
    try:  # long names: each path argument is short enough, the moved paths are not
        name = "n" * 200
        sandbox.write(f"{name}1/{name}2/{name}3/f.txt", "long")
        sandbox.write(f"{name}4/{name}5/{name}6/g.txt", "long")
        try:
            sandbox.move(f"{name}1", f"{name}4/{name}5/{name}6/{name}1")
        except SandboxError:
            pass
        longest = max(len("/".join(p)) for p in sandbox._sizes)
        if longest > MAX_PATH_CHARS:
            problems.append(f"a legal move made a path of {longest} characters (limit {MAX_PATH_CHARS})")
        problems += _round_trips(sandbox, "after moving long names")
    finally:
        sandbox.close()
    return problems


if __name__ == "__main__":
    main("legal moves reach states that do not pickle", reproduce)
