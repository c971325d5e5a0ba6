"""One builder writes the evidence contract for every environment."""

from __future__ import annotations

import gymnasium as gym
import pytest

import tepa_envs
from tepa_envs.core import Evidence
from tepa_envs.core.step_info import StepInfo, oracle_info, step_info

SMALL = {"TEPA/FactConsolidation-v0": {"length": "6k"}}
SHARED = ("key", "context", "evidence", "t")


def test_builder_orders_shared_keys_first_and_adds_success_only_after_a_step():
    info = step_info(key="k", context="c", evidence=(), t=0)
    assert list(info) == list(SHARED)
    evidence = [Evidence("k", "v", 0, True)]
    info = step_info(key="k", context="c", evidence=evidence, t=1, success=True, message="ok",
                     oracle=oracle_info(0, "stable", False, "v"))
    assert list(info) == [*SHARED, "success", "message", "oracle"]
    assert info["evidence"] == evidence and info["evidence"] is not evidence
    assert set(info["oracle"]) == {"phase", "phase_name", "phase_changed", "correct"}


@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_every_env_returns_the_rich_contract_keys(env_id):
    env = gym.make(env_id, **SMALL.get(env_id, {}), info_schema="rich")
    _, info = env.reset(seed=0)
    assert set(SHARED) <= set(info) and info["evidence"] == [] and "success" not in info
    assert set(StepInfo.__annotations__) >= set(SHARED) | {"success", "oracle"}
    action = env.unwrapped.to_action(env.unwrapped.choices(info["key"])[0]) if env.unwrapped.choices(info["key"]) else ""
    _, _, _, _, info = env.step(action)
    assert set(SHARED) <= set(info)
    assert all(isinstance(e, Evidence) for e in info["evidence"])
    env.close()
