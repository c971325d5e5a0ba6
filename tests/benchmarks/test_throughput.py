"""benchmarks/throughput.py: every registered id measured, ratios within a run, targets reported."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import gymnasium as gym

import tepa_envs

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "throughput.py"
SPEC = importlib.util.spec_from_file_location("throughput_benchmark", PATH)
assert SPEC is not None and SPEC.loader is not None
throughput = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(throughput)


def test_every_registered_id_gets_every_applicable_figure():
    start = time.time()
    data = throughput.measure(duration=0.01, runs=1, num_envs=2)
    assert time.time() - start < 120
    assert set(tepa_envs.ENV_IDS) <= set(data["rows"])
    for env_id in tepa_envs.ENV_IDS:
        row = data["rows"][env_id]
        assert {"single", "single_steps_per_s", "sync"} <= set(row)
        assert ("native" in row) == (gym.spec(env_id).vector_entry_point is not None)
        assert ("memory_tepa" in row) == (not env_id.startswith("TEPA/FactConsolidation"))
        assert all(entry["min"] <= entry["median"] <= entry["max"] for entry in row.values())
    assert 0.0 < data["fileops_io_share"] < 1.0


def test_the_table_names_every_missed_target():
    one = {"median": 1.2, "min": 1.1, "max": 1.3}
    slow = {"median": 0.5, "min": 0.4, "max": 0.6}
    data = {"reference": "CartPole-v1", "num_envs": 8, "runs": 3, "duration_s": 1.0, "clock": "wall",
            "machine": "x", "python": "3", "gymnasium": "1", "peers_installed": {"popgym": False},
            "fileops_io_share": 0.9,
            "rows": {"TEPA/A-v0": {"single_steps_per_s": {"median": 5e4, "min": 4e4, "max": 6e4}, "single": one,
                                   "sync": one, "memory_tepa": slow},
                     "TEPA/B-v0": {"single": slow, "sync": slow, "memory_tepa": one},
                     "TEPA/FileOps-v0": {"single": slow, "sync": slow}}}
    text = throughput.table(data)
    assert "| `TEPA/A-v0` | 50,000 | 1.20× (1.10–1.30) |" in text
    assert "missed by `TEPA/B-v0` (0.50×)." in text  # FileOps does real I/O: not held to the target
    assert "its plain environment: missed by `TEPA/A-v0` (0.50×)." in text
    assert "90% of its stepping time" in text and "popgym not installed" in text


class Sleepy(gym.Env):
    """Each step sleeps 2 ms: wall time the process does not run (long beside the step's own
    CPU time, a few tens of microseconds, with the vector env's batching included)."""

    action_space = gym.spaces.Discrete(2)
    observation_space = gym.spaces.Discrete(1)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {}

    def step(self, action):
        time.sleep(0.002)
        return 0, 0.0, False, False, {}


def test_the_cpu_clock_leaves_out_time_the_process_does_not_run():
    wall = throughput.single_rate(Sleepy, 0.05, "wall")
    cpu = throughput.single_rate(Sleepy, 0.01, "cpu")
    assert wall < 500 and cpu > 3 * wall
    assert throughput.vector_rate(gym.vector.SyncVectorEnv([Sleepy]), 0.01, "cpu") > 3 * wall
