"""Every registered TEPA/ environment against Gymnasium's and Stable-Baselines3's checkers.

One parametrized file over every spec in ``gymnasium.envs.registry`` whose id
starts with ``TEPA/`` (MiniGrid style): ``check_env`` with warnings as errors,
pickling, the spec's JSON round trip, ``make_vec`` in ``sync`` and ``async``
(shared memory) modes equal to single environments for the same seeds, and
SB3's ``check_env`` for numeric action spaces.

Whitelisted warnings: none. ``check_env`` runs on ``env.unwrapped`` as
Gymnasium recommends (on the wrapped env it warns that the env is wrapped).
"""

from __future__ import annotations

import inspect
import pickle
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec, load_env_creator
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401

ENV_IDS = sorted(env_id for env_id in gym.envs.registry if env_id.startswith("TEPA/"))
# Smaller worlds for the checker where an environment's signature offers them.
SMALL_KWARGS: dict[str, dict[str, Any]] = {
    "TEPA/FactConsolidation-v0": {"length": "6k"},
}
NUMERIC_ACTION_SPACES = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.Box, gym.spaces.MultiBinary)
NUM_ENVS = 2
VECTOR_STEPS = 165  # crosses the end of a default 160-task episode, so autoreset is compared too


def _kwargs_for(env_id: str) -> dict[str, Any]:
    spec = gym.spec(env_id)
    parameters = inspect.signature(load_env_creator(spec.entry_point)).parameters
    return {k: v for k, v in SMALL_KWARGS.get(env_id, {}).items() if k in parameters}


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _actions(env: gym.Env, seed: int, count: int) -> list[Any]:
    space = env.action_space
    space.seed(seed)
    return [space.sample() for _ in range(count)]


def _assert_equal(a: Any, b: Any, where: str) -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _assert_equal(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert a.tolist() == b.tolist(), where
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=where)
        assert a.dtype == np.asarray(b).dtype, where
    else:
        assert a == b, where


def _assert_info_in_batch(single: dict[str, Any], batch: dict[str, Any], i: int, where: str) -> None:
    for key, value in single.items():
        assert batch[f"_{key}"][i], f"{where}: {key} not marked present"
        if isinstance(value, dict):
            _assert_info_in_batch(value, batch[key], i, f"{where}/{key}")
        else:
            assert batch[key][i] == value or (isinstance(value, np.ndarray) and np.array_equal(batch[key][i], value)), \
                f"{where}: {key}"


def _batch_obs(observation: Any, i: int) -> Any:
    if isinstance(observation, dict):
        return {k: v[i] for k, v in observation.items()}
    if isinstance(observation, tuple):
        return observation[i]
    return observation[i]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_check_env(env_id):
    env = gym.make(env_id, **_kwargs_for(env_id))
    check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_stable_baselines3_check_env(env_id):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make(env_id, **_kwargs_for(env_id))
    if not isinstance(env.action_space, NUMERIC_ACTION_SPACES):
        pytest.skip(f"{env_id}: {type(env.action_space).__name__} action space is not for SB3")
    sb3_check_env(env.unwrapped, warn=True)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickles_mid_episode(env_id):
    env = gym.make(env_id, **_kwargs_for(env_id))
    env.reset(seed=4)
    actions = _actions(env, 4, 6)
    env.step(actions[0])
    copy = pickle.loads(pickle.dumps(env))
    for action in actions[1:]:
        out_original, out_copy = env.step(action), copy.step(action)
        _assert_equal(out_original[0], out_copy[0], "observation")
        assert out_original[1:4] == out_copy[1:4]
        assert out_original[4].keys() == out_copy[4].keys()
    env.close()
    copy.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_spec_round_trips_through_json(env_id):
    env = gym.make(env_id, **_kwargs_for(env_id))
    text = env.spec.to_json()
    spec = EnvSpec.from_json(text)
    assert spec == env.spec and spec.to_json() == text
    remade = gym.make(spec)
    _assert_equal(env.reset(seed=2)[0], remade.reset(seed=2)[0], "first observation")
    env.close()
    remade.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_vec_equals_single_envs(env_id, mode):
    kwargs = _kwargs_for(env_id)
    vector_kwargs = {"shared_memory": True} if mode == "async" else {}
    envs = gym.make_vec(env_id, num_envs=NUM_ENVS, vectorization_mode=mode, vector_kwargs=vector_kwargs, **kwargs)
    singles = [gym.make(env_id, **kwargs) for _ in range(NUM_ENVS)]
    actions = [_actions(single, 10 + i, VECTOR_STEPS) for i, single in enumerate(singles)]

    observations, infos = envs.reset(seed=7)
    previous_done = [False] * NUM_ENVS
    for i, single in enumerate(singles):
        observation, info = single.reset(seed=7 + i)
        _assert_equal(observation, _batch_obs(observations, i), f"reset obs {i}")
        _assert_info_in_batch(info, infos, i, f"reset info {i}")
    for step in range(VECTOR_STEPS):
        batch_actions = [actions[i][step] for i in range(NUM_ENVS)]
        observations, rewards, terminations, truncations, infos = envs.step(np.array(batch_actions))
        for i, single in enumerate(singles):
            if previous_done[i]:
                observation, info = single.reset()
                reward, terminated, truncated = 0.0, False, False
            else:
                observation, reward, terminated, truncated, info = single.step(batch_actions[i])
            where = f"step {step} env {i}"
            _assert_equal(observation, _batch_obs(observations, i), where)
            assert (rewards[i], terminations[i], truncations[i]) == (reward, terminated, truncated), where
            _assert_info_in_batch(info, infos, i, where)
            previous_done[i] = terminated or truncated
    envs.close()
    for single in singles:
        single.close()


# ------------------------------------------------------------------------ render modes
RENDER_SMALL = {"TEPA/FactConsolidation-v0": {"length": "6k"}}


def _render_kwargs(env_id: str) -> dict[str, Any]:
    return RENDER_SMALL.get(env_id, {"phase_lengths": (3, 3, 3, 3)})


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_env_declares_the_render_modes_clients_ask_for(env_id):
    metadata = load_env_creator(gym.spec(env_id).entry_point).metadata
    assert {"ansi", "human", "rgb_array"} <= set(metadata["render_modes"]) and metadata["render_fps"] > 0


@pytest.mark.parametrize("mode", ["rgb_array", "human", "ansi"])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_gymnasium_check_env_in_every_render_mode(env_id, mode, capsys):
    env = gym.make(env_id, **_kwargs_for(env_id), render_mode=mode)
    check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_rgb_array_frames_have_one_fixed_shape(env_id):
    from tepa_envs.core.render import FRAME_SHAPE

    env = gym.make(env_id, **_render_kwargs(env_id), render_mode="rgb_array")
    env.reset(seed=0)
    frames = [env.render()]
    terminated = False
    for _ in range(30):
        if terminated:
            break
        _, _, terminated, _, _ = env.step(env.action_space.sample())
        frames.append(env.render())
    for frame in frames:
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.shape == FRAME_SHAPE
    assert not np.array_equal(frames[0], frames[-1])  # the picture follows the stream
    assert len({frame.tobytes() for frame in frames}) > 1
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_human_prints_the_ansi_lines_to_stdout(env_id, capsys):
    human = gym.make(env_id, **_render_kwargs(env_id), render_mode="human")
    ansi = gym.make(env_id, **_render_kwargs(env_id), render_mode="ansi")
    human.reset(seed=0)
    ansi.reset(seed=0)
    capsys.readouterr()
    lines = []
    for _ in range(3):
        action = human.action_space.sample()
        human.step(action)
        assert human.render() is None
        ansi.step(action)
        lines.append(ansi.render())
    assert capsys.readouterr().out == "".join(lines) and "".join(lines).strip()
    human.close()
    ansi.close()


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/FactConsolidation-v0"])
def test_render_collection_gathers_rgb_frames(env_id):
    env = gym.make(env_id, **_render_kwargs(env_id), render_mode="rgb_array_list")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    frames = env.render()
    assert len(frames) == 2 and all(f.dtype == np.uint8 and f.ndim == 3 for f in frames)
    env.close()


def test_record_video_records_an_episode(tmp_path):
    pytest.importorskip("moviepy", reason="RecordVideo needs moviepy (pip install 'gymnasium[other]')")
    from gymnasium.wrappers import RecordVideo

    env = RecordVideo(gym.make("TEPA/RegimeDrift-v0", phase_lengths=(3, 3, 3, 3), render_mode="rgb_array"),
                      str(tmp_path / "videos"), episode_trigger=lambda episode: True, disable_logger=True)
    env.reset(seed=0)
    terminated = False
    while not terminated:
        _, _, terminated, _, _ = env.step(env.action_space.sample())
    env.close()
    assert list((tmp_path / "videos").glob("*.mp4"))
