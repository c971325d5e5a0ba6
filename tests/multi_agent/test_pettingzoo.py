"""shared_drift_v0 through PettingZoo's API tests and a multi-step determinism test."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

from tepa_envs.agents import TEPA
from tepa_envs.multi_agent import shared_drift_v0

SHORT = {"phase_lengths": (6, 6, 6, 6)}
CONFIGS = [
    {"memory": "tepa", "shared_memory": True},
    {"memory": "append-only", "shared_memory": True, "unreliable_agent": 1},
    {"memory": "tepa", "shared_memory": False, "unreliable_agent": 0, "poison_rate": 0.5},
    {"memory": "tepa-full", "shared_memory": True, "n_agents": 4, "keys_per_agent": 3, "shared_keys": 2},
]


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.mark.parametrize("config", CONFIGS)
def test_parallel_api(config):
    parallel_api_test(shared_drift_v0.parallel_env(**config), num_cycles=200)


@pytest.mark.parametrize("config", CONFIGS)
def test_aec_api(config):
    api_test(shared_drift_v0.env(**config), num_cycles=200)


def test_pettingzoo_seed_test():
    parallel_seed_test(lambda: shared_drift_v0.parallel_env(**SHORT))


def _rollout(env, seed: int, action_seed: int):
    observations, infos = env.reset(seed=seed)
    trace = [(observations, infos)]
    rng = np.random.default_rng(action_seed)
    while env.agents:
        actions = {agent: int(rng.integers(env.n_tools)) for agent in env.agents}
        trace.append(env.step(actions))
    return trace


def _assert_same(a, b, where: str = ""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_same(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


@pytest.mark.parametrize("config", CONFIGS)
def test_multi_step_determinism(config):
    """Same seed, same actions: identical observations, rewards, dones and infos at every step,
    in a fresh env and in the same env reset again (its memories are reset too)."""
    first = shared_drift_v0.parallel_env(**config)
    second = shared_drift_v0.parallel_env(**config)
    reference = _rollout(first, seed=5, action_seed=9)
    assert len(reference) == 161
    _assert_same(reference, _rollout(second, seed=5, action_seed=9), "fresh env")
    _assert_same(reference, _rollout(first, seed=5, action_seed=9), "same env reset")
    different = _rollout(second, seed=6, action_seed=9)
    assert any(not np.array_equal(reference[i][0]["agent_0"], different[i][0]["agent_0"]) for i in range(1, 160))


def test_shared_memory_is_one_object_and_private_memories_are_separate():
    shared = shared_drift_v0.parallel_env(memory="tepa", shared_memory=True)
    assert len({id(m) for m in shared.memories.values()}) == 1
    private = shared_drift_v0.parallel_env(memory="tepa", shared_memory=False)
    assert len({id(m) for m in private.memories.values()}) == 3
    own = TEPA()
    assert shared_drift_v0.parallel_env(memory=own).memories["agent_2"] is own


def test_key_sets_overlap_in_part():
    env = shared_drift_v0.parallel_env(n_agents=3, keys_per_agent=2, shared_keys=1)
    sets = [set(row) for row in env.agent_keys.tolist()]
    assert env.n_keys == 3
    for i in range(3):
        assert len(sets[i] & sets[(i + 1) % 3]) == 1
        assert sets[i] != sets[(i + 1) % 3]
    _, infos = env.reset(seed=0)
    for i, agent in enumerate(env.possible_agents):
        assert env.keys.index(infos[agent]["key"]) in sets[i]


def test_shared_memory_sees_every_agents_evidence_and_private_only_its_own():
    for shared in (True, False):
        env = shared_drift_v0.parallel_env(memory="append-only", shared_memory=shared, **SHORT)
        _, infos = env.reset(seed=1)
        correct = {agent: env.to_action(info["oracle"]["correct"]) for agent, info in infos.items()}
        _, _, _, _, infos = env.step(correct)
        written = {agent: infos[agent]["evidence"][0] for agent in env.possible_agents}
        assert all(e.outcome is True and e.source == agent for agent, e in written.items())
        for agent in env.possible_agents:
            remembered = {(k, r.value) for k in env.keys for r in env.memories[agent].retrieve(k)}
            expected_writers = env.possible_agents if shared else [agent]
            assert remembered == {(written[a].key, written[a].value) for a in expected_writers}


def test_unreliable_agent_reports_false_successes_at_its_rate():
    env = shared_drift_v0.parallel_env(memory="no-memory", unreliable_agent=2, poison_rate=1.0)
    _, infos = env.reset(seed=3)
    for _ in range(20):
        actions = {agent: 0 for agent in env.agents}
        correct = {agent: infos[agent]["oracle"]["correct"] for agent in env.agents}
        _, rewards, _, _, infos = env.step(actions)
        (lie,) = infos["agent_2"]["evidence"]
        assert infos["agent_2"]["poisoned"] and lie.outcome is True and lie.value != correct["agent_2"]
        assert rewards["agent_2"] == float(correct["agent_2"] == "tool_0")
        for honest in ("agent_0", "agent_1"):
            (evidence,) = infos[honest]["evidence"]
            assert not infos[honest]["poisoned"] and evidence.outcome == (evidence.value == correct[honest])
    env = shared_drift_v0.parallel_env(memory="no-memory", unreliable_agent=0, poison_rate=0.3)
    env.reset(seed=0)
    rate = np.mean([env.step({a: 0 for a in env.agents})[4]["agent_0"]["poisoned"] for _ in range(160)])
    assert 0.2 < rate < 0.4


def test_bad_arguments_and_actions_are_refused():
    with pytest.raises(ValueError, match="shared_keys"):
        shared_drift_v0.parallel_env(keys_per_agent=2, shared_keys=2)
    with pytest.raises(ValueError, match="unreliable_agent"):
        shared_drift_v0.parallel_env(n_agents=3, unreliable_agent=3)
    with pytest.raises(ValueError, match="poison_rate"):
        shared_drift_v0.parallel_env(poison_rate=1.5)
    with pytest.raises(TypeError, match="private memories"):
        shared_drift_v0.parallel_env(memory=TEPA(), shared_memory=False)
    with pytest.raises(ValueError, match="unknown memory method"):
        shared_drift_v0.parallel_env(memory="no-such-method")
    env = shared_drift_v0.parallel_env(**SHORT)
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="every live agent"):
        env.step({"agent_0": 0})
    with pytest.raises(ValueError, match="agent_1"):
        env.step({"agent_0": 0, "agent_1": 7, "agent_2": 0})
    _, _, _, _, infos = env.step({"agent_0": 0, "agent_1": 1, "agent_2": 2})
    assert infos["agent_0"]["t"] == 1


def _aec_rollout(seed: int):
    aec = shared_drift_v0.env(memory="tepa", unreliable_agent=1, **SHORT)
    aec.reset(seed=seed)
    rng = np.random.default_rng(seed)
    trace = []
    for agent in aec.agent_iter():
        observation, reward, terminated, truncated, info = aec.last()
        trace.append((agent, observation, reward, terminated, truncated, info))
        aec.step(None if terminated or truncated else int(rng.integers(3)))
    return trace


def test_aec_multi_step_determinism():
    reference = _aec_rollout(seed=2)
    assert len(reference) == 3 * 24 + 3
    _assert_same(reference, _aec_rollout(seed=2), "aec")
