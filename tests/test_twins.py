"""Fully observed twins (issue 33, item 2): every task-stream id has a ``*-MDP-v0`` twin that
shares its world and seeds and adds the correct value's index to the observation."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import tepa_envs
from tepa_envs import TASK_STREAM_IDS, TWIN_IDS, TWINS, twin_id

SMALL = {"phase_lengths": (10, 10, 10, 10)}


def test_every_task_stream_id_has_a_registered_twin():
    assert set(TWINS.values()) == set(TASK_STREAM_IDS) and len(TWIN_IDS) == len(TASK_STREAM_IDS)
    assert twin_id("TEPA/RegimeDrift-v0") == "TEPA/RegimeDrift-MDP-v0"
    assert twin_id("TEPA/RegimeDrift-Noisy-v0") == "TEPA/RegimeDrift-Noisy-MDP-v0"
    for twin, original in TWINS.items():
        spec, original_spec = gym.spec(twin), gym.spec(original)
        assert spec.entry_point == original_spec.entry_point
        assert spec.vector_entry_point == original_spec.vector_entry_point
        assert spec.kwargs == {**original_spec.kwargs, "observe_truth": True}
    assert not set(TWIN_IDS) & set(tepa_envs.ENV_IDS)  # ENV_IDS keeps the originals only


@pytest.mark.parametrize("twin", TWIN_IDS)
def test_twin_passes_check_env(twin):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(twin, **SMALL)
        check_env(env.unwrapped)
        env.close()


def _episode(env_id: str, seed: int, **kwargs: Any
             ) -> tuple[list[tuple[np.ndarray, float, dict[str, Any]]], tuple[str, ...]]:
    env = gym.make(env_id, **{**SMALL, **kwargs})
    env.action_space.seed(seed)
    observation, info = env.reset(seed=seed)
    out = [(observation, 0.0, info)]
    terminated = False
    while not terminated:
        observation, reward, terminated, _, info = env.step(env.action_space.sample())
        out.append((observation, reward, info))
    values = env.unwrapped.values
    env.close()
    return out, values


@pytest.mark.parametrize("twin", TWIN_IDS)
def test_twin_exposes_the_value_the_oracle_names_and_shares_the_world(twin):
    original = TWINS[twin]
    for seed in (0, 1):
        twin_steps, values = _episode(twin, seed)
        plain_steps, _ = _episode(original, seed)
        assert len(twin_steps) == len(plain_steps)
        for (o, r, i), (op, rp, ip) in zip(twin_steps, plain_steps):
            np.testing.assert_array_equal(o[:-1], op)  # the original's observation, then the truth
            assert r == rp and i == ip
            correct = i["oracle"]["correct"]
            assert int(o[-1]) == (values.index(correct) if i["key"] else len(values))


@pytest.mark.parametrize("twin", ["TEPA/RegimeDrift-MDP-v0", "TEPA/FileOps-MDP-v0", "TEPA/PreferenceStream-MDP-v0"])
def test_twin_space_is_the_original_space_plus_one_component(twin):
    env, plain = gym.make(twin), gym.make(TWINS[twin])
    assert isinstance(env.observation_space, gym.spaces.MultiDiscrete)
    assert list(env.observation_space.nvec) == list(plain.observation_space.nvec) + [len(env.unwrapped.values) + 1]
    notified = gym.make(twin, notify="known")
    assert list(notified.observation_space.nvec) == list(plain.observation_space.nvec) + [
        2, len(env.unwrapped.values) + 1]
    for e in (env, plain, notified):
        e.close()


def test_a_policy_reading_the_truth_never_fails():
    """The twin is fully observed: acting on the last component solves every task."""
    for twin in ("TEPA/RegimeDrift-MDP-v0", "TEPA/RegimeDrift-Gradual-MDP-v0", "TEPA/PreferenceStream-MDP-v0",
                 "TEPA/FileOps-MDP-v0"):
        env = gym.make(twin, **SMALL)
        observation, _ = env.reset(seed=3)
        rewards = []
        terminated = False
        while not terminated:
            observation, reward, terminated, _, _ = env.step(int(observation[-1]))
            rewards.append(reward)
        env.close()
        assert all(r == 1.0 for r in rewards), twin


@pytest.mark.parametrize("twin", ["TEPA/RegimeDrift-MDP-v0", "TEPA/RegimeDrift-Gradual-MDP-v0",
                                  "TEPA/RegimeDrift-Zipf-MDP-v0"])
def test_native_vector_twin_equals_sync(twin):
    kwargs = {"phase_lengths": (5, 5, 5, 5)}
    native = gym.make_vec(twin, num_envs=3, **kwargs)
    sync = gym.make_vec(twin, num_envs=3, vectorization_mode="sync", **kwargs)
    assert native.observation_space == sync.observation_space
    np.testing.assert_array_equal(native.reset(seed=2)[0], sync.reset(seed=2)[0])
    policy = np.random.default_rng(1)
    for step in range(50):
        actions = policy.integers(0, native.single_action_space.n, size=3)
        out_n, out_s = native.step(actions), sync.step(actions)
        for a, b in zip(out_n[:4], out_s[:4]):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step}")
    native.close()
    sync.close()
