"""Steps/s of every registered environment, in POPGym's table format: a ratio to CartPole-v1 timed in the same run.

    python benchmarks/throughput.py [--duration 1.0] [--runs 3] [--num-envs 8] [--clock cpu|wall] [--json PATH]
                                    [--readme]

For each id of ``tepa_envs.ENV_IDS``: one environment through ``gym.make``
(Gymnasium's :func:`~gymnasium.utils.performance.benchmark_step`, random actions,
resets included), ``num_envs`` of them in ``SyncVectorEnv`` and, where the spec
has one, the native vector environment (environment steps/s: vector steps times
``num_envs``), and the environment under ``MemoryObservation(memory="tepa")`` as
a ratio to the plain environment timed right before it. CartPole-v1 is timed with the same clock right
before each measurement, so every figure is a ratio within one run; the table
gives the median over ``--runs`` runs and its spread (min–max). POPGym's and
NS-Gym's environments are measured beside them when those packages are installed.

``--clock`` picks what is timed: ``cpu`` (default) the CPU time of this process
(``time.process_time``) around :func:`benchmark_step`'s own loop, so that other
work sharing the cores does not enter the figures; ``wall`` Gymnasium's
:func:`~gymnasium.utils.performance.benchmark_step` itself (wall time).

For ``TEPA/FileOps-v0`` (real file I/O) the table also gives the share of its
stepping time spent on files (:func:`io_share`, under ``cProfile``). ``--readme`` writes the ``throughput`` block of
``docs/results/speed.md`` from the JSON.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import json
import platform
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
from gymnasium.utils.performance import benchmark_step

import tepa_envs
from tepa_envs.agents.evaluation.outputs.blocks import write_blocks
from tepa_envs.agents.evaluation.outputs.tables import markdown_table
from tepa_envs.wrappers import MemoryObservation

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_JSON = HERE / "speed" / "throughput.json"
REFERENCE = "CartPole-v1"
PEERS: dict[str, tuple[str, ...]] = {
    "popgym": ("popgym-RepeatPreviousEasy-v0", "popgym-CountRecallEasy-v0", "popgym-MultiarmedBanditEasy-v0"),
    "ns_gym": (),
}
"""Peer packages measured when installed, with the ids they register (NS-Gym builds its
environments from wrappers rather than ids; it is listed as not measured)."""
FILE_MODULES = ("file_ops/sandbox.py", "file_ops/formats.py", "file_ops/sandbox_paths.py")
OS_CALLS = ("posix.", "io.open", "_io.", "built-in method open", "fsync", "csv.")
TARGET_SINGLE = 1.0
TARGET_MEMORY = 0.8
CLOCKS = {"cpu": "CPU time of the process (time.process_time) around benchmark_step's loop",
          "wall": "wall (gymnasium.utils.performance.benchmark_step)"}
"""Values of ``--clock``, with what each times (recorded in the JSON as ``clock``)."""


def _kwargs(env_id: str, sandbox: str) -> dict[str, Any]:
    return {"sandbox_dir": sandbox} if env_id.startswith("TEPA/FileOps") else {}


def cpu_benchmark_step(env: gym.Env, target_duration: float, seed: int | None = None) -> float:
    """:func:`benchmark_step`'s loop (random actions, resets included, the same seeding), timed
    with the process's CPU time instead of the wall clock."""
    steps = 0
    env.reset(seed=seed)
    env.action_space.sample()
    start = end = time.process_time()
    while True:
        steps += 1
        _, _, terminal, truncated, _ = env.step(env.action_space.sample())
        if terminal or truncated:
            env.reset()
        end = time.process_time()
        if end - start > target_duration:
            break
    return steps / (end - start)


def single_rate(make: Callable[[], gym.Env], duration: float, clock: str = "cpu") -> float:
    env = make()
    try:
        if clock == "wall":
            return float(benchmark_step(env, target_duration=duration, seed=0))  # type: ignore[arg-type]
        return cpu_benchmark_step(env, duration, seed=0)
    finally:
        env.close()


def vector_rate(envs: gym.vector.VectorEnv, duration: float, clock: str = "cpu") -> float:
    """Environment steps/s of a vector env under random actions (autoreset included)."""
    now = time.process_time if clock == "cpu" else time.time
    try:
        envs.reset(seed=0)
        envs.action_space.seed(0)
        steps, start = 0, now()
        while now() - start < duration:
            envs.step(envs.action_space.sample())
            steps += 1
        return steps * envs.num_envs / (now() - start)
    finally:
        envs.close()


def reference_rate(duration: float, clock: str = "cpu") -> float:
    return single_rate(lambda: gym.make(REFERENCE), duration, clock)


def io_share(sandbox: str, steps: int = 2000) -> float:
    """Share of FileOps' stepping time spent on files: own time (cProfile ``tottime``) of the
    sandbox's and the formats' functions and of the OS calls they make (open, read, write,
    stat, rename, unlink, ...), over the own time of everything the loop ran."""
    env = gym.make("TEPA/FileOps-v0", sandbox_dir=sandbox)
    env.reset(seed=0)
    env.action_space.seed(0)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset()
    profile.disable()
    env.close()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.values())
    on_files = sum(entry[2] for (path, _, name), entry in stats.items()
                   if path.endswith(FILE_MODULES) or (path == "~" and any(word in name for word in OS_CALLS)))
    return on_files / total


def measure(duration: float, runs: int, num_envs: int, clock: str = "cpu") -> dict[str, Any]:
    rows: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as sandbox:
        for run in range(runs):
            for env_id in tepa_envs.ENV_IDS:
                kwargs = _kwargs(env_id, sandbox)
                row = rows.setdefault(env_id, {})
                cartpole = reference_rate(duration, clock)
                plain = single_rate(lambda: gym.make(env_id, **kwargs), duration, clock)
                row.setdefault("single", []).append(plain / cartpole)
                row.setdefault("single_steps_per_s", []).append(plain)
                cartpole = reference_rate(duration, clock)
                sync = vector_rate(gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync",
                                                **kwargs), duration, clock)
                row.setdefault("sync", []).append(sync / cartpole)
                if gym.spec(env_id).vector_entry_point is not None:
                    cartpole = reference_rate(duration, clock)
                    native = vector_rate(gym.make_vec(env_id, num_envs=num_envs, **kwargs), duration, clock)
                    row.setdefault("native", []).append(native / cartpole)
                if not env_id.startswith("TEPA/FactConsolidation"):
                    plain = single_rate(lambda: gym.make(env_id, **kwargs), duration, clock)  # right before
                    with_memory = single_rate(lambda: MemoryObservation(gym.make(env_id, **kwargs), memory="tepa"),
                                              duration, clock)
                    row.setdefault("memory_tepa", []).append(with_memory / plain)
            for package, ids in PEERS.items():
                if importlib.util.find_spec(package) is None:
                    continue
                importlib.import_module(package)
                for env_id in ids:
                    cartpole = reference_rate(duration, clock)
                    rate = single_rate(lambda: gym.make(env_id), duration, clock)
                    rows.setdefault(env_id, {}).setdefault("single", []).append(rate / cartpole)
            print(f"run {run + 1}/{runs} done", file=sys.stderr)
        share = io_share(sandbox)
    return {"duration_s": duration, "runs": runs, "num_envs": num_envs, "reference": REFERENCE,
            "clock": CLOCKS[clock],
            "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
            "gymnasium": gym.__version__, "peers_installed": {p: importlib.util.find_spec(p) is not None for p in PEERS},
            "fileops_io_share": share,
            "rows": {env_id: {k: {"median": statistics.median(v), "min": min(v), "max": max(v)}
                              for k, v in row.items()} for env_id, row in rows.items()}}


def _cell(entry: dict[str, float] | None) -> str:
    if entry is None:
        return "—"
    return f"{entry['median']:.2f}× ({entry['min']:.2f}–{entry['max']:.2f})"


def table(data: dict[str, Any]) -> str:
    rows = []
    for env_id, row in data["rows"].items():
        rows.append([f"`{env_id}`", f"{row['single_steps_per_s']['median']:,.0f}" if "single_steps_per_s" in row
                     else "—", _cell(row.get("single")), _cell(row.get("sync")), _cell(row.get("native")),
                     _cell(row.get("memory_tepa"))])
    header = ["environment", "steps/s (one env)", f"one env ÷ {data['reference']}",
              f"{data['num_envs']} envs, sync ÷ {data['reference']}",
              f"{data['num_envs']} envs, native vector ÷ {data['reference']}",
              "`MemoryObservation(tepa)` ÷ the plain env"]
    tepa_rows = {k: v for k, v in data["rows"].items() if k.startswith("TEPA/")}
    no_io = {k: v["single"]["median"] for k, v in tepa_rows.items() if not k.startswith("TEPA/FileOps")}
    below = {k: v for k, v in no_io.items() if v < TARGET_SINGLE}
    memory = {k: v["memory_tepa"]["median"] for k, v in tepa_rows.items() if "memory_tepa" in v}
    memory_below = {k: v for k, v in memory.items() if v < TARGET_MEMORY}
    peers = ", ".join(f"{p} {'measured' if ok else 'not installed'}" for p, ok in data["peers_installed"].items())
    notes = [
        f"Median over {data['runs']} runs (min–max), each figure a ratio to {data['reference']} timed right before "
        f"it in the same run ({data['clock']}, {data['duration_s']:g} s per measurement; {data['machine']}, "
        f"Python {data['python']}, Gymnasium {data['gymnasium']}); vector figures are environment steps/s "
        f"({data['num_envs']} sub-environments). Peers: {peers}.",
        f"`TEPA/FileOps-v0` writes and parses real files: {data['fileops_io_share']:.0%} of its stepping time is "
        "spent on them (the own time of the sandbox's and the formats' functions and of the OS and csv calls, "
        "cProfile).",
        f"Targets: every environment without real I/O ≥ {TARGET_SINGLE:g}× {data['reference']} through "
        "`gym.make`: " + ("met." if not below else "missed by " + ", ".join(
            f"`{k}` ({v:.2f}×)" for k, v in sorted(below.items())) + ".")
        + f" `MemoryObservation(tepa)` ≥ {TARGET_MEMORY:g}× its plain environment: "
        + ("met." if not memory_below else "missed by " + ", ".join(
            f"`{k}` ({v:.2f}×)" for k, v in sorted(memory_below.items())) + "."),
    ]
    return markdown_table(header, rows) + "\n" + "\n\n".join(notes) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=1.0, help="seconds per measurement (default 1)")
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs (default 3)")
    parser.add_argument("--num-envs", type=int, default=8, help="sub-environments of the vector figures")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: the process's CPU time (default); wall: benchmark_step's wall clock")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"where the figures go ({DEFAULT_JSON})")
    parser.add_argument("--readme", action="store_true", help="only write the docs block from --json")
    args = parser.parse_args(argv)
    if not args.readme:
        if args.duration <= 0 or args.runs < 1 or args.num_envs < 1:
            parser.error("--duration must be > 0, --runs and --num-envs >= 1")
        data = measure(args.duration, args.runs, args.num_envs, args.clock)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1) + "\n")
    data = json.loads(args.json.read_text())
    write_blocks({"throughput": table(data)}, ROOT)
    print(table(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
