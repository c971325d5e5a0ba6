"""Reproduce: sandboxes of processes that are gone stay in their parent directory forever.

An async ``gym.make_vec("TEPA/FileOps-v0", num_envs=8, vectorization_mode="async")``
closed with ``close(terminate=True)``, or dropped without ``close()``, leaked every
sub-environment's sandbox; so did SIGTERM or SIGKILL of a FileOps process. A
process that opted in (``install_sigterm_cleanup()``, or ``cleanup_on_sigterm=True``
for the async workers) and dies of SIGTERM must remove its sandboxes; what a SIGKILL
leaves, or a SIGTERM without the opt-in, must be removed by the next sandbox created
in the same directory, and by ``tepa-bench clean``.

    python tests/file_ops/repro_leaks.py   # exit status 0: fixed, 1: reproduced
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _repro_util import main  # noqa: E402

from tepa_envs.file_ops.sandbox import Sandbox  # noqa: E402

PREFIX = "tepa-sandbox-"

HOLD_SCRIPT = r"""
import sys, time
import gymnasium as gym
import tepa_envs  # noqa: F401
from tepa_envs.file_ops import install_sigterm_cleanup
if sys.argv[2] == "opt-in":
    install_sigterm_cleanup()
envs = [gym.make("TEPA/FileOps-v0", sandbox_dir=sys.argv[1]) for _ in range(2)]
for env in envs:
    env.reset(seed=0)
    env.step(0)
print("ready", flush=True)
time.sleep(120)
"""

VECTOR_SCRIPT = r"""
import gc, os, sys
import gymnasium as gym
import tepa_envs  # noqa: F401
directory, how, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
envs = gym.make_vec("TEPA/FileOps-v0", num_envs=n, vectorization_mode="async", sandbox_dir=directory,
                    cleanup_on_sigterm=True)  # the workers are ended with SIGTERM
envs.reset(seed=0)
envs.step(envs.action_space.sample())
opened = len([d for d in os.listdir(directory) if d.startswith("tepa-sandbox-")])
if how == "terminate":
    envs.close(terminate=True)
elif how == "drop":
    del envs
    gc.collect()
print(opened, flush=True)
# how == "exit": leave without closing; interpreter exit terminates the workers
"""


def sandboxes(directory: str) -> list[str]:
    return sorted(d for d in os.listdir(directory) if d.startswith(PREFIX))


def _next_creation_leaves(directory: str) -> list[str]:
    """What is left in ``directory`` besides the sandbox created (and closed) now."""
    sandbox = Sandbox(parent_dir=directory)
    sandbox.reset()
    mine = os.path.basename(sandbox.root)
    left = [d for d in sandboxes(directory) if d != mine]
    sandbox.close()
    return left


def _killed(directory: str, signum: int, opt_in: bool = False) -> tuple[list[str], int]:
    """Run a process holding two FileOps envs in ``directory`` (having called
    ``install_sigterm_cleanup()`` when ``opt_in``), send it ``signum``; the sandboxes
    left right after it died, and its return code."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    how = "opt-in" if opt_in else "default"
    with subprocess.Popen([sys.executable, "-c", HOLD_SCRIPT, directory, how], stdout=subprocess.PIPE, text=True,
                          cwd=directory, env=env) as proc:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            proc.kill()
            raise RuntimeError(f"the FileOps process did not start: {line!r}")
        opened = sandboxes(directory)
        assert len(opened) == 2, opened
        proc.send_signal(signum)
        code = proc.wait(timeout=60)
    return sandboxes(directory), code


def sigkill(directory: str) -> list[str]:
    left, _ = _killed(directory, signal.SIGKILL)
    problems = []
    if len(left) != 2:
        problems.append(f"SIGKILL: expected the 2 sandboxes to stay until reclaimed, found {left}")
    still = _next_creation_leaves(directory)
    if still:
        problems.append(f"SIGKILL: the next sandbox creation left {len(still)} dead process's sandboxes: {still}")
    return problems


def sigterm(directory: str) -> list[str]:
    left, code = _killed(directory, signal.SIGTERM, opt_in=True)
    problems = []
    if left:
        problems.append(f"SIGTERM: the process left {len(left)} sandboxes: {left}")
    if code != -signal.SIGTERM:
        problems.append(f"SIGTERM: the process exited with {code}, not of SIGTERM")
    still = _next_creation_leaves(directory)
    if still:
        problems.append(f"SIGTERM: the next sandbox creation left {still}")
    return problems


def sigterm_without_opt_in(directory: str) -> list[str]:
    """The environment installs no handler: SIGTERM leaves what SIGKILL leaves, and the
    next creation removes it."""
    left, code = _killed(directory, signal.SIGTERM)
    problems = []
    if len(left) != 2:
        problems.append(f"SIGTERM without the opt-in: expected the 2 sandboxes to stay until reclaimed, "
                        f"found {left} (did the environment install a handler?)")
    if code != -signal.SIGTERM:
        problems.append(f"SIGTERM without the opt-in: the process exited with {code}, not of SIGTERM")
    still = _next_creation_leaves(directory)
    if still:
        problems.append(f"SIGTERM without the opt-in: the next sandbox creation left {still}")
    return problems


def tepa_bench_clean(directory: str) -> list[str]:
    left, _ = _killed(directory, signal.SIGKILL)
    out = subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "clean", "--dir", directory],
                         capture_output=True, text=True, cwd=directory, timeout=120)
    problems = []
    if out.returncode != 0:
        problems.append(f"tepa-bench clean --dir: exit status {out.returncode}: "
                        f"{(out.stderr.strip().splitlines() or [''])[-1]}")
    still = sandboxes(directory)
    if still:
        problems.append(f"tepa-bench clean --dir: {len(still)} sandboxes of a killed process left: {still}")
    missing = [name for name in left if name not in out.stdout]
    if out.returncode == 0 and missing:
        problems.append(f"tepa-bench clean did not print what it removed: {missing} not in {out.stdout!r}")
    return problems


def _vector(directory: str, how: str, n: int) -> list[str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", VECTOR_SCRIPT, directory, how, str(n)], capture_output=True,
                         text=True, cwd=directory, timeout=300, env=env)
    if out.returncode != 0:
        return [f"async make_vec ({how}): the process failed: {(out.stderr.strip().splitlines() or [''])[-1]}"]
    label = {"terminate": "close(terminate=True)", "drop": "dropped without close()",
             "exit": "left open at interpreter exit"}[how]
    problems = []
    opened = int(out.stdout.split()[0])
    if opened != n:
        problems.append(f"async make_vec: {opened} sandboxes open, expected {n}")
    left = sandboxes(directory)
    if left:
        problems.append(f"async make_vec {label}: {len(left)} sandboxes left")
    still = _next_creation_leaves(directory)
    if still:
        problems.append(f"async make_vec {label}: {len(still)} sandboxes left after the next creation")
    return problems


def vector_terminate(directory: str) -> list[str]:
    return _vector(directory, "terminate", 8)


def vector_dropped(directory: str) -> list[str]:
    return _vector(directory, "drop", 4)


def vector_exit(directory: str) -> list[str]:
    return _vector(directory, "exit", 4)


PARTS = [sigkill, sigterm, sigterm_without_opt_in, tepa_bench_clean, vector_terminate, vector_dropped, vector_exit]


def reproduce(parent_dir: str) -> list[str]:
    problems: list[str] = []
    for i, part in enumerate(PARTS):
        directory = os.path.join(parent_dir, f"{i}-{part.__name__}")
        os.mkdir(directory)
        try:
            problems += part(directory)
        except Exception as exc:  # noqa: BLE001 - the report
            problems.append(f"{part.__name__}: {type(exc).__name__}: {exc}")
    return problems


if __name__ == "__main__":
    main("sandboxes leak", reproduce)
