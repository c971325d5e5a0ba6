"""Minari as a client (issue 32, item 6): ``DataCollector(record_infos=True)`` records episodes of
every registered id (and of ``MemoryObservation``), ``create_dataset`` writes them,
``load_dataset`` reads them back with their infos, and ``recover_environment`` rebuilds an
environment that steps. The fixed info schema is what lets Minari stack the infos.

Skipped, with the reason, without ``minari[create]`` (the ``clients`` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import tepa_envs
from tepa_envs.wrappers import MemoryObservation

minari = pytest.importorskip("minari", reason="Minari is not installed: pip install 'tepa-envs[clients]'")
pytest.importorskip("jax", reason="Minari's DataCollector needs jax (minari[create]): pip install 'tepa-envs[clients]'")


def short(env_id: str) -> dict[str, Any]:
    if env_id == "TEPA/FactConsolidation-v0":
        return {"length": "6k"}
    return {"phase_lengths": (6, 6, 6, 6)}


@pytest.fixture(autouse=True)
def datasets_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    return tmp_path


def record(env: gym.Env, episodes: int) -> int:
    steps = 0
    env.action_space.seed(0)
    for episode in range(episodes):
        env.reset(seed=episode)
        done = False
        while not done:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done = terminated or truncated
            steps += 1
    return steps


CASES = [(env_id, None) for env_id in tepa_envs.ENV_IDS] + [
    (env_id, "tepa") for env_id in ("TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0")]


@pytest.mark.parametrize("env_id, memory", CASES, ids=[f"{e}-{m}" for e, m in CASES])
def test_record_with_infos_create_load_and_recover(env_id, memory):
    env: gym.Env = gym.make(env_id, **short(env_id))
    if memory is not None:
        env = MemoryObservation(env, memory=memory)
    collector = minari.DataCollector(env, record_infos=True)
    steps = record(collector, episodes=2)
    dataset_id = f"tepa/{env_id.split('/')[1].removesuffix('-v0').lower()}{'-' + memory if memory else ''}/random-v0"
    collector.create_dataset(dataset_id=dataset_id, algorithm_name="random")
    collector.close()

    dataset = minari.load_dataset(dataset_id)
    assert dataset.total_episodes == 2 and dataset.total_steps == steps
    for episode in dataset.iterate_episodes():
        n = len(episode.rewards)
        assert {"key", "success", "evidence", "oracle", "t"} <= set(episode.infos)
        assert len(episode.infos["t"]) == n + 1  # the reset's info and every step's, the terminal one included
        np.testing.assert_array_equal(episode.infos["t"], np.arange(n + 1))
        assert episode.terminations[-1] or episode.truncations[-1]

    recovered = dataset.recover_environment()
    assert recovered.observation_space == env.observation_space
    assert recovered.action_space == env.action_space
    if memory is not None:
        assert isinstance(recovered, MemoryObservation)
    recovered.reset(seed=0)
    recovered.step(recovered.action_space.sample())
    recovered.close()
