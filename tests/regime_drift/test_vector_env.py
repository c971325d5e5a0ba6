"""The native RegimeDrift vector env equals SyncVectorEnv for the same seeds and actions."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.vector import AutoresetMode

import tepa_envs  # noqa: F401
from tepa_envs.regime_drift.vector import RegimeDriftVectorEnv

RICH_BATCHED_KEYS = ("key", "t", "success", "oracle")
UNBATCHED_TEXTS = ("context", "message")
SCHEMAS = ("fixed", "rich")


def _batched_subset(infos: dict[str, Any], schema: str) -> dict[str, Any]:
    if schema == "rich":
        return {name: value for name, value in infos.items() if name.lstrip("_") in RICH_BATCHED_KEYS}
    return {name: value for name, value in infos.items() if name.lstrip("_") not in UNBATCHED_TEXTS}


def _assert_infos_equal(native: dict[str, Any], sync: dict[str, Any], where: str) -> None:
    assert sorted(native) == sorted(sync), where
    for name, value in sync.items():
        if isinstance(value, dict):
            _assert_infos_equal(native[name], value, f"{where}/{name}")
        else:
            assert native[name].dtype == value.dtype, f"{where}/{name}"
            np.testing.assert_array_equal(native[name], value, err_msg=f"{where}/{name}")


def _compare(kwargs: dict[str, Any], num_envs: int, steps: int, seed: Any, schema: str) -> None:
    native = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=num_envs, info_schema=schema, **kwargs)
    sync = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=num_envs, vectorization_mode="sync", info_schema=schema,
                        **kwargs)
    assert isinstance(native.unwrapped, RegimeDriftVectorEnv)
    assert native.observation_space == sync.observation_space
    assert native.action_space == sync.action_space
    obs_n, info_n = native.reset(seed=seed)
    obs_s, info_s = sync.reset(seed=seed)
    np.testing.assert_array_equal(obs_n, obs_s)
    assert obs_n.dtype == obs_s.dtype
    _assert_infos_equal(info_n, _batched_subset(info_s, schema), "reset")
    policy = np.random.default_rng(123)
    for step in range(steps):
        actions = policy.integers(0, native.single_action_space.n, size=num_envs)
        out_n = native.step(actions)
        out_s = sync.step(actions)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated"), out_n[:4], out_s[:4]):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step} {name}")
            assert a.dtype == b.dtype, f"step {step} {name}"
        _assert_infos_equal(out_n[4], _batched_subset(out_s[4], schema), f"step {step}")
    native.close()
    sync.close()


def test_native_vector_env_is_the_default_for_make_vec():
    envs = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=2)
    assert isinstance(envs, RegimeDriftVectorEnv)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    envs.close()


@pytest.mark.parametrize("kwargs", [
    {"phase_lengths": (3, 4, 2, 5)},
    {"phase_lengths": (5, 5, 5, 5), "n_keys": 7, "n_tools": 4, "key_noise": 0.2},
])
@pytest.mark.parametrize("schema", SCHEMAS)
def test_equals_sync_over_several_autoresets(kwargs, schema):
    # 70 steps cross 3+ episode ends, so NEXT_STEP autoreset is compared too.
    _compare(kwargs, num_envs=5, steps=70, seed=11, schema=schema)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_equals_sync_with_a_seed_list_and_default_length(schema):
    _compare({"n_keys": 3}, num_envs=3, steps=330, seed=[4, 9, 2], schema=schema)


def test_the_default_schema_batches_every_fixed_key_at_every_step():
    envs = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=3, phase_lengths=(2, 2, 2, 2))
    _, info = envs.reset(seed=0)
    keys = set(info)
    for _ in range(12):  # crosses a terminal step and an autoreset
        _, _, terminated, _, info = envs.step(np.zeros(3, dtype=np.int64))
        assert set(info) == keys and all(info[f"_{name}"].all() for name in ("key", "evidence", "oracle"))
        if terminated.any():
            assert (info["oracle"]["phase"][terminated] == -1).all()
            assert (info["oracle"]["correct"][terminated] == "").all()
    assert {"key", "t", "scored", "success", "evidence", "oracle", "forfeited"} <= {k.lstrip("_") for k in keys}
    envs.close()


@pytest.mark.parametrize("schema", SCHEMAS)
def test_reset_mask_resets_only_the_chosen_envs(schema):
    kwargs = {"phase_lengths": (2, 2, 2, 2), "n_keys": 4, "info_schema": schema}
    native = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=4, **kwargs)
    sync = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=4, vectorization_mode="sync", **kwargs)
    native.reset(seed=0)
    sync.reset(seed=0)
    actions = np.array([0, 1, 2, 0])
    for _ in range(3):
        native.step(actions)
        sync.step(actions)
    mask = np.array([True, False, True, False])
    obs_n, info_n = native.reset(seed=[7, None, 8, None], options={"reset_mask": mask})
    obs_s, info_s = sync.reset(seed=[7, None, 8, None], options={"reset_mask": mask.copy()})
    np.testing.assert_array_equal(obs_n, obs_s)
    _assert_infos_equal(info_n, _batched_subset(info_s, schema), "masked reset")
    for _ in range(8):
        out_n, out_s = native.step(actions), sync.step(actions)
        for a, b in zip(out_n[:4], out_s[:4]):
            np.testing.assert_array_equal(a, b)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="num_envs"):
        RegimeDriftVectorEnv(num_envs=0)
    with pytest.raises(ValueError, match="n_tools"):
        RegimeDriftVectorEnv(num_envs=2, n_tools=2)
    envs = RegimeDriftVectorEnv(num_envs=2)
    with pytest.raises(ResetNeeded, match="reset"):
        envs.step(np.array([0, 0]))
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        envs.step(np.array([0, 0, 0]))
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        envs.step(np.array([0, 5]))
    with pytest.raises(ValueError, match="length must match"):
        envs.reset(seed=[1, 2, 3])


@pytest.mark.parametrize("kwargs, match", [
    ({"num_envs": 10**12}, r"num_envs must be in \[1, 65536\]"),
    ({"num_envs": 65537}, r"num_envs must be in \[1, 65536\]"),
    ({"num_envs": 10**4, "phase_lengths": (10**4,) * 4}, "MAX_BATCH_CELLS"),
    ({"num_envs": 2**16, "n_keys": 216}, "MAX_BATCH_CELLS"),
    ({"num_envs": 2, "phase_lengths": (10**12, 1, 1, 1)}, r"phase_lengths\[0\]"),
])
def test_sizes_are_refused_before_any_allocation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make_vec("TEPA/RegimeDrift-v0", **kwargs)
    with pytest.raises(TypeError, match="num_envs must be an int"):
        RegimeDriftVectorEnv(num_envs=2.0)


def test_the_largest_batch_at_the_defaults_is_accepted():
    envs = RegimeDriftVectorEnv(num_envs=2**16)  # constructed only: resetting 65,536 worlds takes seconds
    assert envs.observation_space.shape == (2**16, 3)


@pytest.mark.parametrize("key_noise", [0.0, 0.3])
def test_build_world_without_evidence_keys_draws_the_same_numbers(key_noise):
    from tepa_envs.regime_drift.env import build_world, key_names

    keys = key_names(7)
    full_rng, lean_rng = np.random.default_rng(3), np.random.default_rng(3)
    for _ in range(3):  # several worlds in a row: the generators must stay in step
        regime, task_keys, evidence_keys = build_world(full_rng, keys, 4, 50, 0.5, 0.5, key_noise)
        lean_regime, lean_task_keys, lean_keys = build_world(lean_rng, keys, 4, 50, 0.5, 0.5, key_noise,
                                                             with_evidence_keys=False)
        np.testing.assert_array_equal(regime, lean_regime)
        np.testing.assert_array_equal(task_keys, lean_task_keys)
        assert lean_keys is None and len(evidence_keys) == 50
        assert full_rng.bit_generator.state == lean_rng.bit_generator.state


@pytest.mark.parametrize("kwargs, expected", [({}, 0.0), ({"key_noise": 0.25}, 0.25)])
def test_key_noise_is_a_declared_member(kwargs, expected):
    envs = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=2, **kwargs)
    assert isinstance(envs.unwrapped, RegimeDriftVectorEnv) and envs.unwrapped.key_noise == expected
    envs.close()
