"""FlatObservation (issue 32, item 3): every environment and MemoryObservation as one
flat ``Box(float32)``, one-hot where discrete, single and vectorised."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401
from tepa_envs.wrappers import FlatObservation, FlatObservationV, MemoryObservation, MemoryObservationV

ENV_IDS = sorted(env_id for env_id in gym.envs.registry if env_id.startswith("TEPA/"))
FACTS = "TEPA/FactConsolidation-v0"


def _small(env_id: str) -> dict[str, Any]:
    return {"length": "6k"} if env_id == FACTS else {"phase_lengths": (4, 4, 4, 4)}


def _one_hot_blocks(space: gym.Space) -> list[tuple[int, int]]:
    """``(start, stop)`` of the one-hot blocks of ``space``'s flat encoding."""
    blocks: list[tuple[int, int]] = []
    offset = 0

    def walk(sub: gym.Space) -> None:
        nonlocal offset
        if isinstance(sub, gym.spaces.Discrete):
            blocks.append((offset, offset + int(sub.n)))
            offset += int(sub.n)
        elif isinstance(sub, gym.spaces.MultiDiscrete):
            for n in np.ravel(sub.nvec):
                blocks.append((offset, offset + int(n)))
                offset += int(n)
        elif isinstance(sub, gym.spaces.Dict):
            for s in sub.spaces.values():
                walk(s)
        else:
            offset += int(np.prod(sub.shape))

    walk(space)
    return blocks


def _check_flat(env: gym.Env, inner_space: gym.Space, steps: int = 12) -> None:
    space = env.observation_space
    assert isinstance(space, gym.spaces.Box) and space.dtype == np.float32 and len(space.shape) == 1
    blocks = _one_hot_blocks(inner_space)
    observation, _ = env.reset(seed=0)
    env.action_space.seed(0)
    for step in range(steps + 1):
        assert observation.dtype == np.float32 and observation.shape == space.shape
        assert space.contains(observation), step
        for start, stop in blocks:
            assert observation[start:stop].sum() == 1.0, (step, start, stop)
        observation, _, terminated, _, _ = env.step(env.action_space.sample())
        if terminated:
            observation, _ = env.reset()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_env_flattens_into_its_box(env_id):
    inner = gym.make(env_id, **_small(env_id))
    env = FlatObservation(inner)
    expected = sum(stop - start for start, stop in _one_hot_blocks(inner.observation_space))
    if env_id == FACTS:
        expected += 1  # progress
    assert env.observation_space.shape == (expected,)
    _check_flat(env, inner.observation_space)
    env.close()


def test_the_encoding_of_a_regime_drift_observation():
    inner = gym.make("TEPA/RegimeDrift-v0", n_keys=2)
    env = FlatObservation(inner)
    observation, _ = env.reset(seed=0)
    raw = inner.unwrapped._observation(0, inner.unwrapped._task)
    expected = np.zeros(2 + 4 + 2, dtype=np.float32)
    expected[raw[0]] = expected[2 + raw[1]] = expected[6 + raw[2]] = 1.0
    np.testing.assert_array_equal(observation, expected)
    assert raw[1] == 3  # no tool used yet: the "none" entry of the previous-tool block


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0"])
def test_memory_observation_flattens_with_its_memory_view(env_id):
    inner = MemoryObservation(gym.make(env_id, **_small(env_id)), memory="tepa")
    env = FlatObservation(inner)
    n_obs = sum(stop - start for start, stop in _one_hot_blocks(inner.observation_space))
    n_actions = int(inner.action_space.n)
    assert env.observation_space.shape == (n_obs + n_actions + 3,)  # + memory value, validity, support, conflict
    _check_flat(env, inner.observation_space, steps=16)
    # the Dict's entries in its key order; the memory's view as MemoryObservation shows it
    raw, _ = inner.reset(seed=1)
    flat, _ = env.reset(seed=1)
    parts = [raw[name] if name != "obs" else np.concatenate([np.eye(int(n), dtype=np.float32)[v]
                                                             for v, n in zip(raw["obs"], inner.observation_space["obs"].nvec)])
             for name in inner.observation_space.spaces]
    np.testing.assert_array_equal(flat, np.concatenate(parts))
    env.close()


def test_facts_dict_observation_keeps_progress():
    env = FlatObservation(gym.make(FACTS, length="6k"))
    observation, _ = env.reset(seed=0)
    np.testing.assert_array_equal(observation, np.array([1.0, 0.0, 0.0], dtype=np.float32))
    observation, *_ = env.step("")
    assert observation[2] > 0.0


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_flat_envs_pass_gymnasium_check_env_and_pickle(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # the one warning allowed: check_env notes that it checks a wrapped environment
        warnings.filterwarnings("ignore", message=".*is different from the unwrapped version")
        check_env(FlatObservation(gym.make(env_id, **_small(env_id)).unwrapped), skip_render_check=True)
    env = FlatObservation(gym.make(env_id, **_small(env_id)))
    first, _ = env.reset(seed=2)
    copy = pickle.loads(pickle.dumps(env))
    np.testing.assert_array_equal(copy.reset(seed=2)[0], first)
    assert env.spec is not None and env.spec.additional_wrappers[-1].name == "FlatObservation"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_with_the_wrapper(mode):
    envs = gym.make_vec("TEPA/PreferenceStream-v0", num_envs=3, vectorization_mode=mode,
                        wrappers=[FlatObservation], phase_lengths=(3, 3, 3, 3))
    single = FlatObservation(gym.make("TEPA/PreferenceStream-v0", phase_lengths=(3, 3, 3, 3)))
    assert envs.single_observation_space == single.observation_space
    observations, _ = envs.reset(seed=5)
    assert observations.dtype == np.float32 and observations.shape == (3,) + single.observation_space.shape
    np.testing.assert_array_equal(observations[1], single.reset(seed=6)[0])
    for _ in range(15):  # through an autoreset
        observations, *_ = envs.step(envs.action_space.sample())
        assert envs.observation_space.contains(observations)
    envs.close()


def test_the_vector_wrapper_equals_the_single_wrapper_on_the_native_vector_env():
    kwargs = {"phase_lengths": (3, 3, 3, 3), "n_keys": 3}
    native = FlatObservationV(gym.make_vec("TEPA/RegimeDrift-v0", num_envs=4,
                                           vectorization_mode="vector_entry_point", **kwargs))
    sync = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=4, vectorization_mode="sync", wrappers=[FlatObservation],
                        **kwargs)
    assert native.single_observation_space == sync.single_observation_space
    a, _ = native.reset(seed=0)
    b, _ = sync.reset(seed=0)
    np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(0)
    for _ in range(15):
        actions = rng.integers(0, 3, size=4)
        a, ra, *_ = native.step(actions)
        b, rb, *_ = sync.step(actions)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ra, rb)
        assert a.dtype == np.float32 and native.observation_space.contains(a)
    native.close()
    sync.close()


def test_the_vector_wrapper_flattens_batched_memories():
    envs = FlatObservationV(MemoryObservationV(gym.make_vec("TEPA/RegimeDrift-v0", num_envs=2,
                                                            vectorization_mode="vector_entry_point"), "tepa"))
    single = FlatObservation(MemoryObservation(gym.make("TEPA/RegimeDrift-v0"), "tepa"))
    assert envs.single_observation_space == single.observation_space
    observations, _ = envs.reset(seed=0)
    np.testing.assert_array_equal(observations[0], single.reset(seed=0)[0])
    for _ in range(5):
        action = int(single.action_space.sample())
        observations, *_ = envs.step(np.array([action, 0]))
        np.testing.assert_array_equal(observations[0], single.step(action)[0])
    envs.close()


def test_a_space_without_a_flat_encoding_is_refused():
    class TextObs(gym.Env):
        observation_space = gym.spaces.Text(5)
        action_space = gym.spaces.Discrete(2)

    with pytest.raises(TypeError, match="no flat encoding"):
        FlatObservation(TextObs())


def test_the_default_observation_is_unchanged_for_sb3():
    env = gym.make("TEPA/RegimeDrift-v0")
    assert isinstance(env.observation_space, gym.spaces.MultiDiscrete)
    env.close()
