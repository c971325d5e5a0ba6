"""MemoryObservationV: batched memories equal per-environment MemoryObservation at every step."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents import TEPA
from tepa_envs.agents.memories.baselines import AppendOnly, LastWriteWins
from tepa_envs.core import Evidence
from tepa_envs.regime_drift.vector import RegimeDriftVectorEnv
from tepa_envs.wrappers import BATCHED_MEMORIES, MemoryObservation, MemoryObservationV
from tepa_envs.wrappers.vector_memory import MAX_WINDOW, BatchedAppendOnly, BatchedLWW, BatchedTEPA

ENV_ID = "TEPA/RegimeDrift-v0"
SHORT = {"phase_lengths": (10, 10, 10, 10)}  # 40-step episodes: many autoresets
WIDE = {"phase_lengths": (15, 20, 10, 25), "n_keys": 3, "n_tools": 4}


def pair(memory, memory_kwargs, env_kwargs, n):
    per_env = gym.vector.SyncVectorEnv([
        lambda: MemoryObservation(gym.make(ENV_ID, **env_kwargs), memory=memory, memory_kwargs=memory_kwargs)
        for _ in range(n)])
    batched = MemoryObservationV(gym.make_vec(ENV_ID, num_envs=n, **env_kwargs), memory=memory,
                                 memory_kwargs=memory_kwargs)
    return per_env, batched


def assert_same(expected, got, where):
    assert list(expected) == list(got), where
    for name in expected:
        assert got[name].dtype == expected[name].dtype, (where, name)
        np.testing.assert_array_equal(got[name], expected[name], err_msg=f"{where}: {name}")


def run_both(memory, memory_kwargs, env_kwargs, *, n=6, steps=260, seed=0, follow=0.5):
    """Step both with the same actions (random, or the memory's value with probability ``follow``)
    and compare every observation, reward, termination and truncation."""
    per_env, batched = pair(memory, memory_kwargs, env_kwargs, n)
    expected, _ = per_env.reset(seed=seed)
    got, _ = batched.reset(seed=seed)
    assert_same(expected, got, "reset")
    assert batched.observation_space.contains(got)
    rng = np.random.default_rng(seed)
    ends = 0
    for step in range(steps):
        shown = expected["memory_value"].argmax(axis=1)
        use = (rng.random(n) < follow) & expected["memory_value"].any(axis=1)
        actions = np.where(use, shown, rng.integers(0, batched.n_actions, size=n))
        expected, *rest_expected = per_env.step(actions)
        got, *rest_got = batched.step(actions)
        assert_same(expected, got, f"step {step}")
        for a, b in zip(rest_expected[:3], rest_got[:3]):
            np.testing.assert_array_equal(a, b)
        ends += int(rest_got[1].sum())
    return ends


TEPA_CONFIGS = [
    {},
    {"theta_pro": 0.7},  # fresh proposals stay hypotheses until supported
    {"n_rec": 5, "theta_rec": 0.5, "n_min": 2, "theta_rev": 0.45},
    {"theta_prop": 1, "alpha": 0.5, "beta": 2.0, "theta_pro": 0.4},
    {"theta_prop_fresh": 2, "top_k": 1},
    {"preset": "paper", "theta_prop_fresh": 1, "assertion_supersedes": True, "window_outcomes": "own_uses",
     "failed_candidate": "discard", "window_seed": "proposing_outcome", "revoke_check": "after_conflict",
     "tie_break": "recently_updated"},  # the paper preset with every choice set back to v0's
]


@pytest.mark.parametrize("memory_kwargs", TEPA_CONFIGS)
@pytest.mark.parametrize("env_kwargs", [SHORT, WIDE])
@pytest.mark.parametrize("follow", [0.0, 0.8])
def test_batched_tepa_equals_per_env_tepa_at_every_step(memory_kwargs, env_kwargs, follow):
    ends = run_both("tepa", memory_kwargs, env_kwargs, follow=follow)
    assert ends >= 6  # every sub-environment autoreset at least once


@pytest.mark.parametrize("memory", ["no-memory", "lww", "append-only", "tepa-norev"])
@pytest.mark.parametrize("env_kwargs", [SHORT, WIDE])
def test_every_batched_memory_equals_its_python_method(memory, env_kwargs):
    run_both(memory, {}, env_kwargs, follow=0.6)


def test_default_episodes_with_256_envs():
    run_both("tepa", {}, {}, n=256, steps=170, seed=3, follow=0.7)


def test_reset_mask_empties_only_the_chosen_memories():
    per_env, batched = pair("tepa", {}, SHORT, 4)
    expected, _ = per_env.reset(seed=1)
    got, _ = batched.reset(seed=1)
    rng = np.random.default_rng(1)
    for step in range(90):
        actions = rng.integers(0, 3, size=4)
        if step in (25, 40, 61):  # at 40 every episode has just ended: the others still show empty views
            mask = np.array([True, False, step == 61, False])
            expected, _ = per_env.reset(options={"reset_mask": mask})
            got, _ = batched.reset(options={"reset_mask": mask})
            assert_same(expected, got, f"reset_mask at {step}")
        expected, *_ = per_env.step(actions)
        got, *_ = batched.step(actions)
        assert_same(expected, got, f"step {step}")


def test_refused_actions_change_no_memory():
    per_env, batched = pair("tepa", {}, SHORT, 3)
    per_env.reset(seed=2)
    batched.reset(seed=2)
    rng = np.random.default_rng(2)
    for step in range(30):
        actions = rng.integers(0, 3, size=3)
        if step == 12:
            with pytest.raises(ValueError):
                batched.step(np.array([0, 7, 1]))
            with pytest.raises(TypeError):
                batched.step(np.array([0.0, 1.0, 1.0]))
        expected, *_ = per_env.step(actions)
        got, *_ = batched.step(actions)
        assert_same(expected, got, f"step {step}")


def test_spaces_are_memory_observations_batched():
    n = 5
    batched = MemoryObservationV(gym.make_vec(ENV_ID, num_envs=n), memory="lww")
    single = MemoryObservation(gym.make(ENV_ID), memory="lww").observation_space
    assert batched.single_observation_space == single
    assert batched.observation_space == gym.vector.utils.batch_space(single, n)
    assert batched.num_envs == n and batched.single_action_space == gym.make(ENV_ID).action_space
    assert BATCHED_MEMORIES == ("no-memory", "lww", "append-only", "tepa", "tepa-norev")


@pytest.mark.parametrize("memory, memory_kwargs, match", [
    ("tepa-paper", None, "batched memories are"),
    ("sliding-window", None, "batched memories are"),
    (TEPA(), None, "batched memories are"),
    ("tepa", {"preset": "paper"}, "v0"),
    ("tepa", {"window_outcomes": "support_and_conflict"}, "window_outcomes"),
    ("tepa", {"tie_break": "first_created"}, "tie_break"),
    ("tepa", {"n_rec": MAX_WINDOW + 1}, "n_rec"),
    ("append-only", {"retrieval": "lexical"}, "retrieval"),
    ("lww", {"top_k": 2}, "no arguments"),
    ("lww", {"on_notify": "clear"}, "no arguments"),
    ("append-only", {"on_notify": "clear"}, "change notifications"),
    ("tepa", {"on_notify": "revoke"}, "change notifications"),
    ("tepa-norev", {"on_notify": "demote"}, "change notifications"),
])
def test_configurations_it_cannot_batch_are_refused(memory, memory_kwargs, match):
    with pytest.raises(ValueError, match=match):
        MemoryObservationV(gym.make_vec(ENV_ID, num_envs=2), memory=memory, memory_kwargs=memory_kwargs)


def test_environments_it_cannot_read_are_refused():
    with pytest.raises(ValueError, match="key_noise"):
        MemoryObservationV(gym.make_vec(ENV_ID, num_envs=2, key_noise=0.1))
    with pytest.raises(ValueError, match="key_noise"):
        MemoryObservationV(RegimeDriftVectorEnv(2, key_noise=0.5))
    with pytest.raises(ValueError, match="RegimeDriftVectorEnv"):
        MemoryObservationV(gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync"))
    with pytest.raises(TypeError):
        MemoryObservationV(gym.make(ENV_ID))
    with pytest.raises(ValueError, match="count_cap"):
        MemoryObservationV(gym.make_vec(ENV_ID, num_envs=2), count_cap=0)
    with pytest.raises(TypeError, match="revocation"):
        MemoryObservationV(gym.make_vec(ENV_ID, num_envs=2), memory="tepa-norev",
                           memory_kwargs={"revocation": True})


# ------------------------------------------------------------------ the batched memories alone
def python_view(memory, key: str, values: list[str]):
    """What MemoryObservation shows for ``key``: (found, value index, support, conflict)."""
    records = memory.retrieve(key)
    if not records:
        return False, 0, 0, 0
    top = records[0]
    return True, values.index(top.value), top.support, top.conflict


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name, kwargs", [
    ("tepa", {}), ("tepa", {"theta_pro": 0.75, "n_rec": 4, "theta_rec": 0.5}),
    ("tepa", {"alpha": 0.5, "beta": 0.5, "theta_prop": 2, "n_min": 3, "theta_rev": 0.4}),
    ("tepa", {"revocation": False}), ("lww", {}), ("append-only", {}),
])
def test_batched_memories_equal_the_python_ones_on_random_streams(seed, name, kwargs):
    """Many values and keys, outcomes at random (ties of posterior and update time included),
    every sub-environment's view of every key compared after every step."""
    rng = random.Random(seed)
    n_envs, n_keys, n_values = 5, 3, rng.choice([2, 4, 6])
    values = [f"v{i}" for i in range(n_values)]
    if name == "tepa":
        make = lambda: TEPA(**kwargs)  # noqa: E731
        batched = BatchedTEPA(n_envs, n_keys, n_values, TEPA(**kwargs))
    elif name == "lww":
        make, batched = LastWriteWins, BatchedLWW(n_envs, n_keys, n_values)
    else:
        make, batched = AppendOnly, BatchedAppendOnly(n_envs, n_keys, n_values)
    python = [make() for _ in range(n_envs)]
    rows = np.arange(n_envs)
    for t in range(250):
        if t % 97 == 96:  # some memories emptied, as at a sub-environment's reset
            cleared = np.array([rng.random() < 0.5 for _ in range(n_envs)])
            batched.clear(cleared)
            for i in np.flatnonzero(cleared):
                python[i].reset()
        keys = np.array([rng.randrange(n_keys) for _ in range(n_envs)])
        chosen = np.array([rng.choice([0, 0, 1, rng.randrange(n_values)]) for _ in range(n_envs)])
        success = np.array([rng.random() < 0.55 for _ in range(n_envs)])
        batched.observe(rows, keys, chosen, success, np.full(n_envs, t))
        for i in range(n_envs):
            python[i].observe(Evidence(f"k{keys[i]}", values[chosen[i]], t, bool(success[i])))
        for k in range(n_keys):
            found, top, support, conflict = batched.view(np.full(n_envs, k))
            for i in range(n_envs):
                expected = python_view(python[i], f"k{k}", values)
                got = (bool(found[i]),) + ((int(top[i]), int(support[i]), int(conflict[i])) if found[i]
                                           else (0, 0, 0))
                assert got == expected, (t, i, k)


def test_sb3_adapter_equals_dummy_vec_env_of_memory_observations():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from tepa_envs.wrappers.sb3 import SB3VecEnv

    n = 4
    dummy = DummyVecEnv([lambda: MemoryObservation(gym.make(ENV_ID, **SHORT), memory="tepa") for _ in range(n)])
    adapted = SB3VecEnv(MemoryObservationV(gym.make_vec(ENV_ID, num_envs=n, **SHORT), memory="tepa"))
    dummy.seed(5)
    adapted.seed(5)
    assert adapted.observation_space == dummy.observation_space and adapted.action_space == dummy.action_space
    assert_same(dummy.reset(), adapted.reset(), "reset")
    rng = np.random.default_rng(0)
    for step in range(130):
        actions = rng.integers(0, 3, size=n)
        expected, got = dummy.step(actions), adapted.step(actions)
        assert_same(expected[0], got[0], f"step {step}")
        np.testing.assert_array_equal(expected[1], got[1])
        assert expected[1].dtype == got[1].dtype
        np.testing.assert_array_equal(expected[2], got[2])
        for info_expected, info_got in zip(expected[3], got[3]):
            assert ("terminal_observation" in info_expected) == ("terminal_observation" in info_got)
            if "terminal_observation" in info_expected:
                terminal_expected, terminal_got = info_expected["terminal_observation"], info_got["terminal_observation"]
                assert_same(dict(sorted(terminal_expected.items())), dict(sorted(terminal_got.items())), "terminal")
    assert adapted.get_attr("render_mode") == [None] * n and adapted.env_is_wrapped(object) == [False] * n
