"""SharedMemory: shared_drift_v0 with one team memory or one memory per agent."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
from pettingzoo.utils import conversions, wrappers

from tepa_envs.agents.memories import TEPA, OracleReset, TEPAFull
from tepa_envs.core import Record
from tepa_envs.multi_agent import shared_drift_v0
from tepa_envs.wrappers import MEMORY_ENTRIES, SharedMemory
from tepa_envs.wrappers.memory_observation import memory_view

SHORT = {"phase_lengths": (6, 6, 6, 6)}
CONFIGS = [
    ({}, {"memory": "tepa", "shared": True}),
    ({"unreliable_agent": 1}, {"memory": "append-only", "shared": True}),
    ({"unreliable_agent": 0, "poison_rate": 0.5}, {"memory": "tepa", "shared": False}),
    ({"n_agents": 4, "keys_per_agent": 3, "shared_keys": 2}, {"memory": "tepa-full", "shared": True}),
    ({"unreliable_agent": 2}, {"memory": "oracle-reset", "shared": False}),
]


def wrapped(env_kwargs: dict | None = None, **memory_kwargs) -> SharedMemory:
    return SharedMemory(shared_drift_v0.parallel_env(**(env_kwargs or {})), **memory_kwargs)


def wrapped_aec(env_kwargs: dict, memory_kwargs: dict):
    aec = conversions.parallel_to_aec(wrapped(env_kwargs, **memory_kwargs))
    return wrappers.OrderEnforcingWrapper(wrappers.AssertOutOfBoundsWrapper(aec))


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.mark.parametrize("env_kwargs,memory_kwargs", CONFIGS)
def test_parallel_api(env_kwargs, memory_kwargs):
    parallel_api_test(wrapped(env_kwargs, **memory_kwargs), num_cycles=200)


@pytest.mark.parametrize("env_kwargs,memory_kwargs", CONFIGS)
def test_aec_api(env_kwargs, memory_kwargs):
    """PettingZoo's AEC test also checks every observation lies in the widened space."""
    api_test(wrapped_aec(env_kwargs, memory_kwargs), num_cycles=200)


def test_pettingzoo_seed_test():
    parallel_seed_test(lambda: wrapped(SHORT, memory="tepa"))


def _rollout(env, seed: int, action_seed: int):
    observations, infos = env.reset(seed=seed)
    trace = [(observations, infos)]
    rng = np.random.default_rng(action_seed)
    while env.agents:
        actions = {agent: int(rng.integers(env.n_tools)) for agent in env.agents}
        trace.append(env.step(actions))
    return trace


@pytest.mark.parametrize("env_kwargs,memory_kwargs", CONFIGS)
def test_wrapped_env_is_deterministic_and_keeps_the_worlds_numbers(env_kwargs, memory_kwargs):
    """Same seed and actions: identical observations in a fresh wrapper and in the same one reset
    (its memories are reset too); rewards and infos are the bare environment's, untouched."""
    first, second = wrapped(env_kwargs, **memory_kwargs), wrapped(env_kwargs, **memory_kwargs)
    bare = shared_drift_v0.parallel_env(**env_kwargs)
    reference = _rollout(first, seed=5, action_seed=9)
    world = _rollout(bare, seed=5, action_seed=9)
    assert len(reference) == len(world) == 161
    width = bare.observation_space("agent_0").shape[0]
    for again in (_rollout(second, seed=5, action_seed=9), _rollout(first, seed=5, action_seed=9)):
        for step, (a, b) in enumerate(zip(reference, again)):
            for agent in bare.possible_agents:
                np.testing.assert_array_equal(a[0][agent], b[0][agent], err_msg=f"step {step}")
    for step, (w, m) in enumerate(zip(world, reference)):
        assert w[1:] == m[1:], f"step {step}"
        for agent in bare.possible_agents:
            np.testing.assert_array_equal(w[0][agent], m[0][agent][:width], err_msg=f"step {step}")


def test_observation_appends_the_memory_view_of_the_next_key():
    env = wrapped(SHORT, memory="append-only")
    fields = env.observation_fields()
    assert len(fields) == env.observation_space("agent_0").shape[0]
    inner = env.unwrapped.observation_fields()
    assert fields[:len(inner)] == inner
    assert fields[len(inner):] == (*(f"memory_value[{v}]" for v in env.values),
                                   "memory_validity", "memory_support", "memory_conflict")
    observations, infos = env.reset(seed=3)
    assert all(not obs[len(inner):].any() for obs in observations.values())  # empty memory shows nothing
    rng = np.random.default_rng(1)
    shown = 0
    while env.agents:
        observations, _, _, _, infos = env.step({a: int(rng.integers(env.n_tools)) for a in env.agents})
        for agent, observation in observations.items():
            record = env.top_record(agent, infos[agent])
            view = memory_view(record, env.to_action, env.n_tools, env.count_cap)
            np.testing.assert_array_equal(observation[len(inner):],
                                          np.concatenate([view[name] for name in MEMORY_ENTRIES]))
            if infos[agent]["key"]:
                first = env.memories[agent].retrieve(infos[agent]["key"], infos[agent]["context"])
                assert (record is None) == (not first)
                if record is not None:
                    shown += 1
                    assert isinstance(record, Record) and record == first[0]
                    assert observation[len(inner) + env.to_action(record.value)] == 1.0
            else:
                assert record is None and not observation[len(inner):].any()
    assert shown > 0


def test_shared_memory_is_one_object_and_private_memories_are_separate():
    shared = wrapped(memory="tepa", shared=True)
    assert len({id(m) for m in shared.memories.values()}) == 1
    private = wrapped(memory="tepa", shared=False)
    assert len({id(m) for m in private.memories.values()}) == 3
    assert set(private.memories) == set(private.possible_agents)
    own = TEPA()
    assert wrapped(memory=own).memories["agent_2"] is own


def test_shared_memory_sees_every_agents_evidence_and_private_only_its_own():
    for shared in (True, False):
        env = wrapped(SHORT, memory="append-only", shared=shared)
        _, infos = env.reset(seed=1)
        correct = {agent: env.to_action(info["oracle"]["correct"]) for agent, info in infos.items()}
        _, _, _, _, infos = env.step(correct)
        written = {agent: infos[agent]["evidence"][0] for agent in env.possible_agents}
        assert all(e.outcome is True and e.source == agent for agent, e in written.items())
        for agent in env.possible_agents:
            remembered = {(k, r.value) for k in env.keys for r in env.memories[agent].retrieve(k)}
            expected_writers = env.possible_agents if shared else [agent]
            assert remembered == {(written[a].key, written[a].value) for a in expected_writers}


def test_false_reports_reach_the_shared_memory():
    env = wrapped({"unreliable_agent": 0, "poison_rate": 1.0, **SHORT}, memory="append-only")
    _, infos = env.reset(seed=0)
    correct = {agent: info["oracle"]["correct"] for agent, info in infos.items()}
    _, rewards, _, _, infos = env.step({agent: env.to_action(value) for agent, value in correct.items()})
    assert all(reward == 1.0 for reward in rewards.values())
    (lie,) = infos["agent_0"]["evidence"]
    assert infos["agent_0"]["poisoned"] and lie.value != correct["agent_0"]
    # every agent told the truth about a correct tool, so only agent_0's lie names a wrong one
    for agent in env.possible_agents:
        assert lie.value in [r.value for r in env.memories[agent].retrieve(lie.key)]


@pytest.mark.parametrize("shared", [True, False])
def test_phase_boundary_hook_is_called_once_per_boundary(shared):
    memory = OracleReset() if shared else "oracle-reset"
    env = wrapped(SHORT, memory=memory, shared=shared)
    unique = list({id(m): m for m in env.memories.values()}.values())
    assert len(unique) == (1 if shared else 3)
    _, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    boundaries = 0
    while env.agents:
        _, _, _, _, infos = env.step({a: int(rng.integers(env.n_tools)) for a in env.agents})
        if any(info.get("oracle", {}).get("phase_changed") for info in infos.values()):
            boundaries += 1
            # the oracle memory was cleared after this step's evidence was written
            assert all(not m.retrieve(k) for m in unique for k in env.keys)
        assert all(m.boundaries_seen == boundaries for m in unique)
    assert boundaries == 3
    env.reset(seed=0)
    assert all(m.boundaries_seen == 0 for m in unique)


def test_trial_is_bound_for_tepa_full_and_spent_in_the_env():
    env = wrapped(memory="tepa-full", shared=False)
    assert all(isinstance(m, TEPAFull) and m.trial is None for m in env.memories.values())
    env.reset(seed=0)
    assert all(m.trial == env.unwrapped.trial for m in env.memories.values())
    rng = np.random.default_rng(0)
    while env.agents:
        env.step({a: int(rng.integers(env.n_tools)) for a in env.agents})
    spent = sum(env.unwrapped.trials_spent.values())
    assert spent > 0
    assert spent == sum(m.trial_budget_spent for m in env.memories.values())
    env.reset(seed=1)
    assert env.unwrapped.trials_spent == {} and all(m.trial_budget_spent == 0 for m in env.memories.values())


class PlainMemory:
    """A user's memory with only the protocol's members: it does not subclass MemoryHooks,
    so its look-alike ``trial`` and ``on_phase_boundary`` must not be touched."""

    name = "plain"

    def __init__(self) -> None:
        self.trial = "untouched"
        self.boundary_calls = 0
        self.resets = 0
        self.seen: list = []
        self.asked: list[tuple[str, str]] = []

    def on_phase_boundary(self) -> None:
        self.boundary_calls += 1

    def observe(self, evidence) -> None:
        self.seen.append(evidence)

    def retrieve(self, key: str, context: str = "") -> list:
        self.asked.append((key, context))
        return []

    def reset(self) -> None:
        self.resets += 1
        self.seen.clear()


def test_memory_without_hooks_gets_evidence_but_no_hook_calls():
    own = PlainMemory()
    env = wrapped(SHORT, memory=own)
    _, infos = env.reset(seed=0)
    while env.agents:
        assert own.asked == [(info["key"], info["context"]) for info in infos.values()]
        own.asked.clear()
        _, _, _, _, infos = env.step({a: 0 for a in env.agents})
    assert own.asked == []  # no task is presented after the last step
    assert own.resets == 1 and len(own.seen) == 24 * 3
    assert [e.source for e in own.seen[:3]] == env.possible_agents
    assert own.trial == "untouched" and own.boundary_calls == 0


def test_bad_arguments_are_refused():
    with pytest.raises(TypeError, match="private memories"):
        wrapped(memory=TEPA(), shared=False)
    with pytest.raises(ValueError, match="unknown memory method"):
        wrapped(memory="no-such-method")
    with pytest.raises(TypeError, match="shared"):
        wrapped(memory="tepa", shared="yes")
    with pytest.raises(ValueError, match="count_cap"):
        wrapped(memory="tepa", count_cap=0)
    with pytest.raises(ValueError, match="unknown agent"):
        wrapped().observation_fields("agent_9")
