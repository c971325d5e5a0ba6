"""TorchRL as a client (issue 32, item 6): ``check_env_specs`` and a rollout on every registered id
through ``torchrl.envs.GymEnv``; ``GymWrapper`` over ``MemoryObservation`` (its ``Dict``) and over
``FlatObservation``; the fixed info schema read into the rollout by TorchRL's info-dict reader.

Skipped, with the reason, without ``torchrl`` (the ``clients`` extra)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import tepa_envs
from tepa_envs.wrappers import FlatObservation, MemoryObservation, NumpyInfo

torchrl_envs = pytest.importorskip("torchrl.envs", reason="TorchRL is not installed: pip install 'tepa-envs[clients]'")
import torch  # noqa: E402  (torchrl brings torch)
from torchrl.data import Unbounded  # noqa: E402
from torchrl.envs.gym_like import default_info_dict_reader  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402


def short(env_id: str) -> dict[str, Any]:
    if env_id == "TEPA/FactConsolidation-v0":
        return {"length": "6k"}
    return {"phase_lengths": (6, 6, 6, 6)}


@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_check_env_specs_and_a_rollout_on_every_id(env_id):
    env = torchrl_envs.GymEnv(env_id, **short(env_id))
    try:
        check_env_specs(env, seed=0)
        rollout = env.rollout(40)
        assert rollout.batch_size[0] > 0
        assert rollout["next", "reward"].shape == (rollout.batch_size[0], 1)
        assert bool(rollout["next", "done"][-1]) or rollout.batch_size[0] == 40
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0"])
@pytest.mark.parametrize("flat", [False, True], ids=["dict", "flat"])
def test_gym_wrapper_over_a_memory_observation(env_id, flat):
    env: gym.Env = MemoryObservation(gym.make(env_id, **short(env_id)), memory="tepa")
    if flat:
        env = FlatObservation(env)
    wrapped = torchrl_envs.GymWrapper(env)
    try:
        check_env_specs(wrapped, seed=0)
        rollout = wrapped.rollout(30)
        if flat:
            assert rollout["observation"].dtype == torch.float32 and rollout["observation"].ndim == 2
        else:
            assert rollout["memory_validity"].shape == (rollout.batch_size[0], 1)
    finally:
        wrapped.close()


INFO_KEYS = ["t", "scored", "success", "forfeited"]
INFO_DTYPES = [torch.int64, torch.bool, torch.bool, torch.bool]


def test_the_default_info_reader_needs_numpy_info():
    # TorchRL's default reader asks each value for its dtype: the fixed schema's Python
    # numbers have none, NumpyInfo's have
    plain = torchrl_envs.GymEnv("TEPA/RegimeDrift-v0", phase_lengths=(6, 6, 6, 6))
    plain.set_info_dict_reader(default_info_dict_reader(INFO_KEYS))
    try:
        with pytest.raises(AttributeError, match="dtype"):
            plain.rollout(5)
    finally:
        plain.close()
    env = torchrl_envs.GymWrapper(NumpyInfo(gym.make("TEPA/RegimeDrift-v0", phase_lengths=(6, 6, 6, 6))))
    env.set_info_dict_reader(default_info_dict_reader(INFO_KEYS))
    try:
        rollout = env.rollout(5)
        assert rollout["next", "t"].reshape(-1).tolist() == [1, 2, 3, 4, 5]
    finally:
        env.close()


def test_the_fixed_info_schema_reads_into_the_rollout():
    env = torchrl_envs.GymWrapper(NumpyInfo(gym.make("TEPA/RegimeDrift-v0", phase_lengths=(6, 6, 6, 6))))
    env.set_info_dict_reader(default_info_dict_reader(
        INFO_KEYS, spec=[Unbounded(shape=(), dtype=dtype) for dtype in INFO_DTYPES]))
    try:
        check_env_specs(env, seed=0)
        rollout = env.rollout(24)
        steps = rollout.batch_size[0]
        assert rollout["next", "t"].reshape(-1).tolist() == list(range(1, steps + 1))
        assert rollout["next", "success"].dtype == torch.bool
    finally:
        env.close()
