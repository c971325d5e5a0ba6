"""shared_drift_v0 (memory-free) through PettingZoo's API tests, determinism, evidence and poisoning.

The memory wrapper is tested in ``tests/wrappers/test_shared_memory.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

from tepa_envs.core import Evidence
from tepa_envs.error import ResetNeeded
from tepa_envs.multi_agent import shared_drift_v0

SHORT = {"phase_lengths": (6, 6, 6, 6)}
CONFIGS = [
    {},
    {"unreliable_agent": 1},
    {"unreliable_agent": 0, "poison_rate": 0.5},
    {"n_agents": 4, "keys_per_agent": 3, "shared_keys": 2},
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
    in a fresh env and in the same env reset again."""
    first = shared_drift_v0.parallel_env(**config)
    second = shared_drift_v0.parallel_env(**config)
    reference = _rollout(first, seed=5, action_seed=9)
    assert len(reference) == 161
    _assert_same(reference, _rollout(second, seed=5, action_seed=9), "fresh env")
    _assert_same(reference, _rollout(first, seed=5, action_seed=9), "same env reset")
    different = _rollout(second, seed=6, action_seed=9)
    assert any(not np.array_equal(reference[i][0]["agent_0"], different[i][0]["agent_0"]) for i in range(1, 160))


def test_env_holds_no_memory():
    env = shared_drift_v0.parallel_env()
    assert not hasattr(env, "memories") and not hasattr(env, "reader_params")
    for removed in ("memory", "shared_memory"):
        with pytest.raises(TypeError, match=removed):
            shared_drift_v0.parallel_env(**{removed: "tepa" if removed == "memory" else True})


def test_observation_is_key_previous_tool_and_previous_success():
    env = shared_drift_v0.parallel_env(**SHORT)
    fields = env.observation_fields()
    assert len(fields) == env.observation_space("agent_0").shape[0] == env.n_keys + env.n_tools + 2
    assert not any(name.startswith("memory") for name in fields)
    observations, infos = env.reset(seed=4)
    for agent in env.agents:
        named = dict(zip(fields, observations[agent].tolist()))
        assert named[f"key[{infos[agent]['key']}]"] == 1.0 and sum(observations[agent][:env.n_keys]) == 1.0
        assert named["previous_tool[none]"] == 1.0 and named["previous_success"] == 0.0
    actions = {agent: env.to_action(infos[agent]["oracle"]["correct"]) if agent == "agent_0" else
               (env.to_action(infos[agent]["oracle"]["correct"]) + 1) % env.n_tools for agent in env.agents}
    observations, rewards, _, _, infos = env.step(actions)
    for agent in env.agents:
        named = dict(zip(fields, observations[agent].tolist()))
        assert named[f"previous_tool[{env.values[actions[agent]]}]"] == 1.0
        assert named["previous_success"] == rewards[agent] == (1.0 if agent == "agent_0" else 0.0)
        assert named[f"key[{infos[agent]['key']}]"] == 1.0


def test_infos_carry_each_agents_evidence_through_step_info():
    env = shared_drift_v0.parallel_env(**SHORT)
    observations, infos = env.reset(seed=2)
    assert all(info["evidence"] == [] and "success" not in info and "poisoned" not in info
               for info in infos.values())
    assert list(infos["agent_0"]) == ["key", "context", "evidence", "t", "oracle"]
    rng = np.random.default_rng(0)
    while env.agents:
        before = infos
        actions = {agent: int(rng.integers(env.n_tools)) for agent in env.agents}
        _, rewards, terminations, _, infos = env.step(actions)
        for agent, info in infos.items():
            (evidence,) = info["evidence"]
            assert isinstance(evidence, Evidence)
            assert (evidence.key, evidence.value, evidence.t, evidence.source) == (
                before[agent]["key"], env.values[actions[agent]], before[agent]["t"], agent)
            assert evidence.outcome is info["success"] is (rewards[agent] == 1.0)
            assert info["success"] is (env.values[actions[agent]] == before[agent]["oracle"]["correct"])
            assert info["poisoned"] is False and info["t"] == before[agent]["t"] + 1
            if terminations[agent]:
                assert info["key"] == "" and info["context"] == "" and "oracle" not in info
            else:
                assert info["key"] == env.current_key(agent) and info["context"]
                assert info["oracle"]["phase_changed"] == (info["t"] in (6, 12, 18))
    assert infos["agent_0"]["t"] == 24


def test_trials_answer_the_current_regime_and_are_counted_per_kind():
    env = shared_drift_v0.parallel_env(**SHORT)
    assert env.offers_trials is True
    with pytest.raises(ResetNeeded):
        env.trial("support", "k0", "tool_0")
    _, infos = env.reset(seed=1)
    key, correct = infos["agent_0"]["key"], infos["agent_0"]["oracle"]["correct"]
    assert env.trial("support", key, correct) is True
    assert not any(env.trial("contamination", key, v) for v in env.values if v != correct)
    assert env.trial("support", "no-such-key", correct) is False
    assert env.trials_spent == {"support": 2, "contamination": env.n_tools - 1}
    with pytest.raises(ValueError):
        env.trial("no-such-kind", key, correct)
    with pytest.raises(TypeError):
        env.trial("support", key, 0)
    assert env.current_key("agent_0") == key  # trials never advance the world
    _, again = env.reset(seed=1)
    assert env.trials_spent == {} and again["agent_0"]["key"] == key


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


def test_unreliable_agent_reports_false_successes_at_its_rate():
    env = shared_drift_v0.parallel_env(unreliable_agent=2, poison_rate=1.0)
    _, infos = env.reset(seed=3)
    for _ in range(20):
        actions = {agent: 0 for agent in env.agents}
        correct = {agent: infos[agent]["oracle"]["correct"] for agent in env.agents}
        key = infos["agent_2"]["key"]
        _, rewards, _, _, infos = env.step(actions)
        (lie,) = infos["agent_2"]["evidence"]
        assert infos["agent_2"]["poisoned"] and lie.outcome is True and lie.value != correct["agent_2"]
        assert lie.source == "agent_2" and lie.key == key
        assert rewards["agent_2"] == float(correct["agent_2"] == "tool_0")
        assert infos["agent_2"]["success"] is (correct["agent_2"] == "tool_0")
        for honest in ("agent_0", "agent_1"):
            (evidence,) = infos[honest]["evidence"]
            assert not infos[honest]["poisoned"] and evidence.outcome == (evidence.value == correct[honest])
    env = shared_drift_v0.parallel_env(unreliable_agent=0, poison_rate=0.3)
    env.reset(seed=0)
    rate = np.mean([env.step({a: 0 for a in env.agents})[4]["agent_0"]["poisoned"] for _ in range(160)])
    assert 0.2 < rate < 0.4


def test_poisoning_changes_only_the_unreliable_agents_report():
    """The liar's world is the same world: rewards, keys and honest reports do not move."""
    honest, lying = shared_drift_v0.parallel_env(**SHORT), shared_drift_v0.parallel_env(
        unreliable_agent=1, poison_rate=0.5, **SHORT)
    a, b = _rollout(honest, seed=8, action_seed=3), _rollout(lying, seed=8, action_seed=3)
    lies = 0
    for (obs_a, rew_a, _, _, info_a), (obs_b, rew_b, _, _, info_b) in zip(a[1:], b[1:]):
        assert rew_a == rew_b
        for agent in honest.possible_agents:
            np.testing.assert_array_equal(obs_a[agent], obs_b[agent])
            if agent != "agent_1" or not info_b[agent]["poisoned"]:
                assert info_a[agent]["evidence"] == info_b[agent]["evidence"]
            else:
                lies += 1
                (told,), (true,) = info_b[agent]["evidence"], info_a[agent]["evidence"]
                assert told.outcome is True and (told.key, told.t, told.source) == (true.key, true.t, true.source)
    assert 0 < lies < 24


def test_bad_arguments_and_actions_are_refused():
    with pytest.raises(ValueError, match="shared_keys"):
        shared_drift_v0.parallel_env(keys_per_agent=2, shared_keys=2)
    with pytest.raises(ValueError, match="unreliable_agent"):
        shared_drift_v0.parallel_env(n_agents=3, unreliable_agent=3)
    with pytest.raises(ValueError, match="poison_rate"):
        shared_drift_v0.parallel_env(poison_rate=1.5)
    with pytest.raises(ValueError, match="n_tools"):
        shared_drift_v0.parallel_env(n_tools=2)
    with pytest.raises(TypeError, match="render_mode"):  # any str is accepted (tests/test_ecosystem.py)
        shared_drift_v0.parallel_env(render_mode=1)
    env = shared_drift_v0.parallel_env(**SHORT)
    with pytest.raises(ResetNeeded, match="reset"):
        env.step({})
    env.reset(seed=0)
    with pytest.raises(ValueError, match="every live agent"):
        env.step({"agent_0": 0})
    with pytest.raises(ValueError, match="agent_1"):
        env.step({"agent_0": 0, "agent_1": 7, "agent_2": 0})
    _, _, _, _, infos = env.step({"agent_0": 0, "agent_1": 1, "agent_2": 2})
    assert infos["agent_0"]["t"] == 1
    while env.agents:
        env.step({agent: 0 for agent in env.agents})
    with pytest.raises(ResetNeeded, match="ended"):
        env.step({"agent_0": 0, "agent_1": 0, "agent_2": 0})


@pytest.mark.parametrize("kwargs, error, match", [
    ({"n_tools": 10**30}, ValueError, r"n_tools must be in \[3, 64\]"),
    ({"n_tools": 65}, ValueError, r"n_tools must be in \[3, 64\]"),
    ({"n_agents": 10**30}, ValueError, r"n_agents must be in \[1, 216\]"),
    ({"n_agents": 217, "keys_per_agent": 1, "shared_keys": 0}, ValueError, r"n_agents must be in \[1, 216\]"),
    ({"keys_per_agent": 10**30}, ValueError, r"keys_per_agent must be in \[1, 216\]"),
    ({"n_agents": 100, "keys_per_agent": 3, "shared_keys": 0}, ValueError,
     r"n_agents \* \(keys_per_agent - shared_keys\) must be <= 216"),
    ({"phase_lengths": (10**12, 1, 1, 1)}, ValueError, r"phase_lengths\[0\] must be in \[1, 1000000\]"),
    ({"n_agents": 200, "keys_per_agent": 1, "shared_keys": 0, "phase_lengths": (10**6,) * 4}, ValueError,
     r"sum\(phase_lengths\) \* n_agents must be <= 20,000,000"),
    ({"phase_lengths": {0: 6, 1: 6, 2: 6, 3: 6}}, TypeError, "phase_lengths must be a tuple or list"),
    ({"n_agents": 3.0}, TypeError, "n_agents must be an int"),
])
def test_sizes_are_bounded_in_the_constructor(kwargs, error, match):
    with pytest.raises(error, match=match):
        shared_drift_v0.parallel_env(**kwargs)


def test_the_largest_world_is_accepted():
    env = shared_drift_v0.parallel_env(n_agents=216, keys_per_agent=1, shared_keys=0, n_tools=64, **SHORT)
    assert env.n_keys == 216 and len(set(env.keys)) == 216


def _aec_rollout(seed: int):
    aec = shared_drift_v0.env(unreliable_agent=1, **SHORT)
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
