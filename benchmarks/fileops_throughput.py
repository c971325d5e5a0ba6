"""FileOps-v0 throughput with real file I/O, as ratios to RegimeDrift-v0 in the same run.

    python benchmarks/fileops_throughput.py [--steps 20000] [--episodes 50] [--no-cli]

Reports raw environment steps/s (random actions), the whole agent loop in
tasks/s, the sandbox on a disk-backed temporary directory against the default
(``/dev/shm`` when usable), the sandbox's file tools against plain unchecked
``open()`` calls in the same directory, and the wall time of
``tepa-bench reproduce executable`` (50 seeds, every method) and of a 50-seed
run of the seven methods of issue 4.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


import tepa_envs  # noqa: F401
from tepa_envs.file_ops.sandbox import default_sandbox_parent
from tepa_envs.file_ops.sandbox import Sandbox

from env_throughput import agent_tasks_per_second, env_steps_per_second  # benchmarks/ is sys.path[0]

ISSUE_METHODS = "no-memory,append-only,lww,reactive-forgetting,tepa,tepa-norev,oracle-reset"


def tool_round_trips_per_second(rounds: int, parent: str | None) -> tuple[float, float]:
    """write + read + stat of one file: through the sandbox, and with unchecked open()."""
    sandbox = Sandbox(parent_dir=parent)
    sandbox.reset()
    payload = "id,name\n" + "".join(f"{i},name {i}\n" for i in range(6))
    start = time.perf_counter()
    for _ in range(rounds):
        sandbox.write("outbox/table.csv", payload)
        sandbox.read("outbox/table.csv")
        sandbox.stat("outbox/table.csv")
    checked = rounds / (time.perf_counter() - start)
    plain_path = os.path.join(sandbox.root, "plain.csv")
    start = time.perf_counter()
    for _ in range(rounds):
        with open(plain_path, "w", encoding="utf-8") as f:
            f.write(payload)
        with open(plain_path, encoding="utf-8") as f:
            f.read()
        os.stat(plain_path)
    plain = rounds / (time.perf_counter() - start)
    sandbox.close()
    return checked, plain


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--no-cli", action="store_true", help="skip the tepa-bench wall-time runs")
    args = parser.parse_args()

    drift = env_steps_per_second("TEPA/RegimeDrift-v0", args.steps)
    files = env_steps_per_second("TEPA/FileOps-v0", args.steps)
    disk = env_steps_per_second("TEPA/FileOps-v0", args.steps // 4, sandbox_dir=tempfile.gettempdir())
    print(f"sandbox directory: default {default_sandbox_parent() or tempfile.gettempdir()}, "
          f"disk-backed {tempfile.gettempdir()}")
    print(f"TEPA/RegimeDrift-v0          {drift:>9.0f} steps/s (reference)")
    print(f"TEPA/FileOps-v0              {files:>9.0f} steps/s  = {files / drift:.3f}x RegimeDrift")
    print(f"TEPA/FileOps-v0 (disk /tmp)  {disk:>9.0f} steps/s  = {disk / drift:.3f}x RegimeDrift")
    for method in ("no-memory", "tepa"):
        ref = agent_tasks_per_second(method, args.episodes, "TEPA/RegimeDrift-v0")
        rate = agent_tasks_per_second(method, args.episodes, "TEPA/FileOps-v0")
        print(f"agent loop ({method:<9}) FileOps {rate:>7.0f} tasks/s vs RegimeDrift {ref:>7.0f} "
              f"= {rate / ref:.3f}x")
    checked, plain = tool_round_trips_per_second(2000, default_sandbox_parent())
    print(f"sandbox write+read+stat {checked:>7.0f}/s vs unchecked open() {plain:>7.0f}/s "
          f"= {checked / plain:.2f}x")
    if args.no_cli:
        return
    cli = [sys.executable, "-m", "tepa_envs.agents.evaluation.cli"]
    with tempfile.TemporaryDirectory() as out:
        wall = timed(cli + ["reproduce", "executable", "--quiet", "--out", out])
        print(f"tepa-bench reproduce executable (50 seeds, all methods, 2 workers): {wall:.1f}s wall")
        wall = timed(cli + ["run", "TEPA/FileOps-v0", "--methods", ISSUE_METHODS, "--seeds", "50",
                            "--quiet", "--out", out])
        print(f"tepa-bench run FileOps-v0, 7 methods x 50 seeds (2 workers): {wall:.1f}s wall")


if __name__ == "__main__":
    main()
