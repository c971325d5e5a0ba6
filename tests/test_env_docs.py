"""Every registered environment documents itself in Gymnasium's markdown sections."""

import gymnasium as gym
import pytest
from gymnasium.envs.registration import load_env_creator

import tepa_envs

SECTIONS = ("## Description", "## Action Space", "## Observation Space", "## Rewards", "## Episode End",
            "## Arguments")


@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_docstring_has_every_section_in_order(env_id):
    doc = load_env_creator(gym.spec(env_id).entry_point).__doc__ or ""
    positions = [doc.find(section) for section in SECTIONS]
    assert -1 not in positions, f"{env_id} lacks {[s for s, p in zip(SECTIONS, positions) if p < 0]}"
    assert positions == sorted(positions)


@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_every_constructor_argument_is_documented(env_id):
    import inspect

    creator = load_env_creator(gym.spec(env_id).entry_point)
    arguments = (creator.__doc__ or "").split("## Arguments", 1)[1]
    for name in inspect.signature(creator).parameters:
        assert f"``{name}``" in arguments, f"{env_id}: argument {name!r} is not documented"
