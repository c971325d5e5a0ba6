"""NumpyInfo: the same info, its numbers as 0-d numpy arrays, on every registered environment."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401
from tepa_envs.wrappers import NumpyInfo

ENV_IDS = sorted(env_id for env_id in gym.envs.registry if env_id.startswith("TEPA/"))
FACTS = "TEPA/FactConsolidation-v0"
DTYPE_OF = {bool: np.bool_, int: np.int64, float: np.float64}


def _small(env_id: str) -> dict[str, Any]:
    return {"length": "6k"} if env_id == FACTS else {"phase_lengths": (4, 4, 4, 4)}


def _same_with_numpy_numbers(plain: dict[str, Any], wrapped: dict[str, Any], path: str = "info") -> None:
    assert list(plain) == list(wrapped), path
    for key, value in plain.items():
        got = wrapped[key]
        if isinstance(value, dict):
            _same_with_numpy_numbers(value, got, f"{path}.{key}")
        elif type(value) in DTYPE_OF:
            assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == DTYPE_OF[type(value)], path
            assert got == value, f"{path}.{key}"
        else:
            assert type(got) is type(value) and got == value, f"{path}.{key}"


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_info_keeps_its_keys_and_values_with_numpy_numbers(env_id):
    plain = gym.make(env_id, **_small(env_id))
    wrapped = NumpyInfo(gym.make(env_id, **_small(env_id)))
    try:
        _, a = plain.reset(seed=3)
        _, b = wrapped.reset(seed=3)
        _same_with_numpy_numbers(a, b)
        plain.action_space.seed(3)
        for _ in range(200):
            action = plain.action_space.sample()
            *_, done_a, trunc_a, a = plain.step(action)
            *_, done_b, trunc_b, b = wrapped.step(action)
            _same_with_numpy_numbers(a, b)
            assert (done_a, trunc_a) == (done_b, trunc_b)
            if done_a or trunc_a:
                break
        assert done_a or trunc_a, "the episode should end within 200 steps"
    finally:
        plain.close()
        wrapped.close()


def test_the_checker_passes_and_the_wrapper_rebuilds_from_its_spec():
    env = NumpyInfo(gym.make("TEPA/RegimeDrift-v0", **_small("TEPA/RegimeDrift-v0")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(env, skip_render_check=True)
    assert env.spec is not None and env.spec.additional_wrappers[-1].name == "NumpyInfo"
    again = gym.make(env.spec)
    assert isinstance(again, NumpyInfo)
    again.close()
    env.close()


def test_a_vector_env_of_wrapped_envs_stacks_them_into_typed_arrays():
    envs = gym.make_vec("TEPA/PreferenceStream-v0", num_envs=3, wrappers=[NumpyInfo], **_small("x"))
    try:
        _, info = envs.reset(seed=0)
        assert info["t"].dtype == np.int64 and info["scored"].dtype == np.bool_
        _, _, _, _, info = envs.step(envs.action_space.sample())
        assert info["scored"].dtype == np.bool_ and info["scored"].all()
        assert info["oracle"]["phase"].dtype == np.int64 and info["oracle"]["phase"].shape == (3,)
    finally:
        envs.close()


def test_not_an_env_is_a_type_error():
    with pytest.raises(TypeError, match="env must be a gymnasium.Env"):
        NumpyInfo("TEPA/RegimeDrift-v0")
