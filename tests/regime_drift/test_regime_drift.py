"""TEPA/RegimeDrift-v0: the evidence contract, seeding, and the drift schedule."""

import contextlib
import json
from pathlib import Path
import signal
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401
from tepa_envs.core import Evidence

ENV_ID = "TEPA/RegimeDrift-v0"


def rollout(seed, steps=None, **kwargs):
    env = gym.make(ENV_ID, **kwargs)
    obs, info = env.reset(seed=seed)
    trace = [(obs.tolist(), info["key"], info["context"], info["oracle"]["correct"])]
    rng = np.random.default_rng(123)
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        evidence = [[e.key, e.value, e.t, e.outcome, e.source] for e in env.unwrapped.last_evidence]
        trace.append((obs.tolist(), reward, info["key"], evidence))
        done = terminated or truncated
    return trace


def test_check_env_passes_with_warnings_as_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(ENV_ID).unwrapped)


def test_registered_under_both_spellings():
    assert gym.make("tepa_envs:TEPA/RegimeDrift-v0").unwrapped.__class__.__name__ == "RegimeDriftEnv"


def test_same_seed_same_trajectory_and_different_seed_differs():
    assert rollout(7) == rollout(7)
    assert rollout(7, n_keys=3) != rollout(8, n_keys=3)


def test_same_trajectory_in_another_process():
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            "from test_regime_drift import rollout; print(json.dumps(rollout(11, n_keys=3, key_noise=0.2)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "77", "PATH": ""}).stdout
    assert json.loads(out) == json.loads(json.dumps(rollout(11, n_keys=3, key_noise=0.2)))


def test_info_contract_after_reset_and_step():
    env = gym.make(ENV_ID, phase_lengths=(2, 2, 2, 2))
    obs, info = env.reset(seed=0)
    assert info["evidence"]["count"] == 0 and info["scored"] is False
    correct = env.unwrapped.to_action(info["oracle"]["correct"])
    _, _, _, _, info2 = env.step(correct)
    assert info2["scored"] is True and info2["success"] is True and info2["message"] == "completed"
    assert info2["evidence"] == {"count": 1, "key": info["key"], "value": info["oracle"]["correct"], "t": 0,
                                 "outcome": 1, "source": "executor"}
    assert env.unwrapped.last_evidence == (Evidence(info["key"], info["oracle"]["correct"], 0, True, "executor"),)


def test_rich_info_contract_after_reset_and_step():
    env = gym.make(ENV_ID, phase_lengths=(2, 2, 2, 2), info_schema="rich")
    obs, info = env.reset(seed=0)
    assert info["evidence"] == [] and "success" not in info
    assert info["key"].count("/") == 2 and "Available tools" in info["context"]
    assert set(info["oracle"]) == {"phase", "phase_name", "phase_changed", "correct"}
    correct = env.unwrapped.to_action(info["oracle"]["correct"])
    _, reward, _, _, info2 = env.step(correct)
    assert reward == 1.0 and info2["success"] is True
    (evidence,) = info2["evidence"]
    assert isinstance(evidence, Evidence) and evidence.outcome is True and evidence.t == 0
    assert info2 is not info and info2["evidence"] is not info["evidence"]


def test_phase_boundaries_follow_the_kwargs():
    env = gym.make(ENV_ID, phase_lengths=(3, 1, 4, 2))
    _, info = env.reset(seed=1)
    phases, changed = [info["oracle"]["phase"]], [info["oracle"]["phase_changed"]]
    terminated = False
    steps = 0
    while not terminated:
        _, _, terminated, _, info = env.step(0)
        steps += 1
        if not terminated:
            phases.append(info["oracle"]["phase"])
            changed.append(info["oracle"]["phase_changed"])
    assert steps == 10
    assert phases == [0, 0, 0, 1, 2, 2, 2, 2, 3, 3]
    assert [i for i, c in enumerate(changed) if c] == [3, 4, 8]


def test_regimes_follow_the_fractions():
    env = gym.make(ENV_ID, n_keys=10, n_tools=4, light_drift_fraction=0.3, partial_return_fraction=0.5)
    env.reset(seed=5)
    regime = env.unwrapped.regime
    assert np.count_nonzero(regime[1] != regime[0]) == 3
    assert np.all(regime[2] != regime[0]) and np.all(regime[2] != regime[1])
    assert np.count_nonzero(regime[3] == regime[0]) == 5
    assert np.all((regime[3] == regime[0]) | (regime[3] == regime[2]))


def test_key_noise_files_evidence_under_a_wrong_key():
    for noise, expect_wrong in [(0.0, False), (1.0, True)]:
        env = gym.make(ENV_ID, key_noise=noise, phase_lengths=(5, 5, 5, 5))
        _, info = env.reset(seed=2)
        for _ in range(20):
            key = info["key"]
            _, _, terminated, _, info = env.step(0)
            assert (env.unwrapped.last_evidence[0].key != key) == expect_wrong
            assert (info["evidence"]["key"] != key) == expect_wrong
            if terminated:
                break


def test_trials_do_not_advance_the_stream():
    env = gym.make(ENV_ID)
    _, info = env.reset(seed=3)
    t_before = env.unwrapped.t
    assert env.unwrapped.trial("support", info["key"], info["oracle"]["correct"]) is True
    assert env.unwrapped.t == t_before and env.unwrapped.trials_spent["support"] == 1
    with pytest.raises(ValueError, match="trial kind"):
        env.unwrapped.trial("bogus", info["key"], "tool_0")


@pytest.mark.parametrize("kwargs", [
    {"n_tools": 2}, {"n_keys": 0}, {"light_drift_fraction": 1.2}, {"key_noise": -0.1},
    {"phase_lengths": (40, 40, 40)}, {"phase_lengths": (40, 0, 40, 40)},
])
def test_bad_kwargs_raise_value_error(kwargs):
    with pytest.raises(ValueError), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a bad kwarg is refused; any warning before it is beside the point
        gym.make(ENV_ID, **kwargs)


@contextlib.contextmanager
def deadline(seconds: float):
    """Fail (``TimeoutError``) instead of hanging when the block runs longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"took more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_tools": 10**30}, r"n_tools must be in \[3, 64\]"),
    ({"n_tools": 65}, r"n_tools must be in \[3, 64\]"),
    ({"n_keys": 10**30}, r"n_keys must be in \[1, 216\]"),
    ({"n_keys": 10**7}, r"n_keys must be in \[1, 216\]"),
    ({"n_keys": 217}, r"n_keys must be in \[1, 216\]"),
    ({"phase_lengths": (10**12, 1, 1, 1)}, r"phase_lengths\[0\] must be in \[1, 1000000\]"),
    ({"phase_lengths": (40, 40, 40, 10**6 + 1)}, r"phase_lengths\[3\] must be in \[1, 1000000\]"),
    ({"phase_lengths": [40] * 10**6}, "got 1000000 items"),
])
def test_sizes_are_bounded_in_the_constructor_at_once(kwargs, match):
    with deadline(1.0), pytest.raises(ValueError, match=match):
        gym.make(ENV_ID, **kwargs)


def test_the_bounds_themselves_are_accepted():
    env = gym.make(ENV_ID, n_tools=64, n_keys=216, phase_lengths=[1, 1, 1, 1]).unwrapped
    assert env.n_tools == 64 and len(set(env.keys)) == 216 and env.schedule.total == 4


@pytest.mark.parametrize("phase_lengths", [{0: 40, 1: 40, 2: 40, 3: 40}, "abcd", 40, None, range(4)])
def test_phase_lengths_must_be_a_tuple_or_list(phase_lengths):
    with pytest.raises(TypeError, match="phase_lengths must be a tuple or list"):
        gym.make(ENV_ID, phase_lengths=phase_lengths)


def test_bad_actions_and_misuse_are_refused():
    env = gym.make(ENV_ID, phase_lengths=(1, 1, 1, 1)).unwrapped
    with pytest.raises(ResetNeeded, match="reset"):
        env.step(0)
    env.reset(seed=0)
    for action in (3, -1, np.int64(3), np.array(-1)):
        with pytest.raises(ValueError, match=r"action must be in \[0, 2\]"):
            env.step(action)
    for action in ("tool_0", 1.5, True, np.array([0])):
        with pytest.raises(TypeError, match="action must be an int"):
            env.step(action)
    for _ in range(4):
        env.step(0)
    with pytest.raises(ResetNeeded, match="ended"):
        env.step(0)
    with pytest.raises(ValueError, match="value must be one of tool_0, tool_1, tool_2, got 'hammer'"):
        env.to_action("hammer")
    with pytest.raises(TypeError, match="value must be a str"):
        env.to_action(0)


def test_ansi_render_describes_the_last_step():
    env = gym.make(ENV_ID, render_mode="ansi")
    env.reset(seed=0)
    env.step(1)
    assert "tool_1" in env.render()


@pytest.mark.parametrize("kwargs", [
    {"n_keys": 5, "n_tools": 7, "key_noise": 0.3},
    {"schedule": "noisy", "n_keys": 3},
    {"schedule": "gradual"},
    {"schedule": "poisson", "n_keys": 4, "info_schema": "rich"},
])
def test_text_outcome_and_message_follow_the_world_at_every_step(kwargs):
    """The step path builds texts from per-key tails and outcomes from per-task tables;
    they must be task_context's text and what the schedule decides from the world."""
    from tepa_envs.regime_drift.env import task_context

    env = gym.make(ENV_ID, **kwargs).unwrapped
    rng = np.random.default_rng(5)
    for seed in (0, 1):
        observation, info = env.reset(seed=seed)
        terminated, t = False, 0
        while not terminated:
            key, context, correct = info["key"], info["context"], info["oracle"]["correct"]
            assert context == task_context(t, key, env.values)
            assert observation[0] == env.keys.index(key) == int(env.task_keys[t])
            assert correct == env.values[env.world.tool(t, int(env.task_keys[t]))]
            action = int(rng.integers(env.action_space.n))
            value = env.values[action]
            draw = env.world.outcome_draw
            success = env.drift.succeeds(value == correct, None if draw is None else draw[t])
            observation, reward, terminated, _, info = env.step(action)
            assert reward == float(success) and info["success"] is success
            failure = f"{value} rejected the request: unsupported operation"
            assert info["message"] == ("completed" if success else failure)
            assert env.last_evidence == (Evidence(env.evidence_keys[t], value, t, success, "executor"),)
            assert observation.tolist()[1:3] == [action, int(success)]
            t += 1
