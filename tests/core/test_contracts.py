"""The declared task contract: every registered env implements it, agents reach
it through wrappers, and memories get their hooks without attribute discovery."""

from __future__ import annotations

import gymnasium as gym
import pytest

import tepa_envs
from tepa_envs.agents import MemoryAgent, MemoryHooks, run_episode
from tepa_envs.agents.memories import TEPAFull, hooks_of
from tepa_envs.agents.readers.task_access import task_access
from tepa_envs.core.contracts import TaskEnv
from tepa_envs.error import TrialsUnavailable

SMALL = {"TEPA/FactConsolidation-v0": {"length": "6k"}}


@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_every_registered_env_implements_the_task_contract(env_id):
    env = gym.make(env_id, **SMALL.get(env_id, {}))
    assert isinstance(env.unwrapped, TaskEnv)
    env.reset(seed=0)
    access = task_access(env)
    if env.unwrapped.offers_trials:
        key = env.unwrapped.keys[0]
        value = access.choices(key)[0]
        assert access.trial("support", key, value) in (True, False)
        assert access.trials_spent() == {"support": 1}
    else:
        assert access.trial is None
        with pytest.raises(TrialsUnavailable):
            env.unwrapped.trial("support", "k", "v")
    env.close()


class OnlyFirstTool(gym.Wrapper):
    """A wrapper that narrows the choices: agents must see the override."""

    def choices(self, key: str) -> tuple[str, ...]:
        return ("tool_0",)


def test_a_wrapper_overrides_what_the_agent_sees():
    env = OnlyFirstTool(gym.make("TEPA/RegimeDrift-v0", phase_lengths=(5, 5, 5, 5)))
    result = run_episode(env, MemoryAgent("no-memory"), seed=0)
    inner = run_episode(gym.make("TEPA/RegimeDrift-v0", phase_lengths=(5, 5, 5, 5)), MemoryAgent("no-memory"), seed=0)
    regime = gym.make("TEPA/RegimeDrift-v0", phase_lengths=(5, 5, 5, 5)).unwrapped
    regime.reset(seed=0)
    expected = [regime.regime_table()[k][p] == "tool_0" for k, p in zip(result.keys, result.phase)]
    assert list(result.success) == expected
    assert list(result.success) != list(inner.success)


def test_an_env_without_the_contract_is_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="task contract"):
        MemoryAgent("tepa").reset(gym.make("CartPole-v1"), seed=0)


def test_memory_hooks_default_to_no_ops_and_plain_objects_get_none():
    class Plain:
        name = "plain"

        def observe(self, evidence): ...

        def retrieve(self, key, context=""):
            return []

        def reset(self): ...

    hooks = hooks_of(Plain())
    assert isinstance(hooks, MemoryHooks) and hooks.trial_budget_spent == 0
    hooks.bind_trial(lambda kind, key, value: True)
    hooks.on_phase_boundary()
    full = TEPAFull()
    assert hooks_of(full) is full
    with pytest.raises(TypeError, match="trial must be callable"):
        full.bind_trial("not a function")
