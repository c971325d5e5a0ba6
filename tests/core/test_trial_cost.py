"""``trial_cost``: held-out trials either cost nothing ("free", the default) or are
paid with tasks of the stream ("task"), for an equal-budget comparison."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents import MemoryAgent
from tepa_envs.core.stream import FORFEIT_MESSAGE, TRIAL_COSTS

STREAM_IDS = ("TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0")


def make(env_id: str, tmp_path, **kwargs) -> gym.Env:
    """The environment with the rich info (``forfeited`` present only with ``trial_cost="task"``)."""
    if env_id == "TEPA/FileOps-v0":
        kwargs.setdefault("sandbox_dir", str(tmp_path))
    kwargs.setdefault("info_schema", "rich")
    return gym.make(env_id, **kwargs)


def correct_action(env: gym.Env, info: dict) -> int:
    return int(env.unwrapped.to_action(info["oracle"]["correct"]))


def run_correct(env: gym.Env, seed: int, trials_at: dict[int, int]) -> list[tuple]:
    """Always play the correct value; before stepping on task ``t`` run
    ``trials_at.get(t, 0)`` trials. Returns ``(obs, reward, terminated, info)`` per step."""
    _, info = env.reset(seed=seed)
    steps = []
    terminated = False
    while not terminated:
        t = info["t"]
        for _ in range(trials_at.get(t, 0)):
            key = info["key"]
            env.unwrapped.trial("support", key, env.unwrapped.choices(key)[0])
        obs, reward, terminated, truncated, info = env.step(correct_action(env, info))
        assert not truncated
        steps.append((obs, reward, terminated, info))
    return steps


def test_the_modes():
    assert TRIAL_COSTS == ("free", "task")


@pytest.mark.parametrize("env_id", STREAM_IDS)
@pytest.mark.parametrize("k", [1, 3])
def test_k_trials_forfeit_exactly_the_next_k_tasks(env_id, k, tmp_path):
    env = make(env_id, tmp_path, trial_cost="task")
    total = env.unwrapped.schedule.total
    start = 5
    steps = run_correct(env, 0, {start: k})
    assert len(steps) == total  # the stream length is unchanged
    forfeited = [t for t, (_, _, _, info) in enumerate(steps) if info["forfeited"]]
    assert forfeited == list(range(start, start + k))
    for t, (_, reward, _, info) in enumerate(steps):
        if t in forfeited:
            assert info["success"] is False and reward == 0.0
            assert info["evidence"] == []
            assert info["message"] == FORFEIT_MESSAGE
        else:
            assert info["success"] is True and reward == 1.0
            assert len(info["evidence"]) == 1
    assert env.unwrapped.tasks_forfeited == k
    assert env.unwrapped.trials_spent == {"support": k}
    env.close()


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_a_forfeited_step_does_not_execute_the_action(env_id, tmp_path):
    env = make(env_id, tmp_path, trial_cost="task")
    obs, info = env.reset(seed=1)
    first_obs = obs
    env.unwrapped.trial("support", info["key"], env.unwrapped.choices(info["key"])[0])
    obs, _, _, _, info = env.step(correct_action(env, info))
    assert info["forfeited"] is True and info["success"] is False
    # the previous-step fields still say "no step executed yet"
    np.testing.assert_array_equal(obs[-2:], first_obs[-2:])
    env.close()


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_trials_beyond_the_stream_forfeit_only_the_remaining_tasks(env_id, tmp_path):
    env = make(env_id, tmp_path, trial_cost="task")
    total = env.unwrapped.schedule.total
    steps = run_correct(env, 2, {total - 2: 5})
    assert len(steps) == total
    assert [t for t, s in enumerate(steps) if s[3]["forfeited"]] == [total - 2, total - 1]
    assert env.unwrapped.tasks_forfeited == 2
    assert env.unwrapped.trials_spent == {"support": 5}
    # a new episode starts with nothing owed
    _, info = env.reset(seed=2)
    _, _, _, _, info = env.step(correct_action(env, info))
    assert info["forfeited"] is False and info["success"] is True
    assert env.unwrapped.tasks_forfeited == 0 and env.unwrapped.trials_spent == {}
    env.close()


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_free_mode_is_unchanged(env_id, tmp_path):
    env = make(env_id, tmp_path)
    assert env.unwrapped.trial_cost == "free"
    without = run_correct(env, 3, {})
    with_trials = run_correct(env, 3, {4: 3, 10: 1})
    assert env.unwrapped.trials_spent == {"support": 4}
    assert env.unwrapped.tasks_forfeited == 0
    for (o1, r1, d1, i1), (o2, r2, d2, i2) in zip(without, with_trials, strict=True):
        np.testing.assert_array_equal(o1, o2)
        assert (r1, d1) == (r2, d2) == (1.0, d1)
        assert "forfeited" not in i2
        assert i1 == i2
    env.close()


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_task_mode_without_trials_matches_free_mode(env_id, tmp_path):
    free = run_correct(make(env_id, tmp_path), 4, {})
    task = run_correct(make(env_id, tmp_path, trial_cost="task"), 4, {})
    for (o1, r1, d1, i1), (o2, r2, d2, i2) in zip(free, task, strict=True):
        np.testing.assert_array_equal(o1, o2)
        assert (r1, d1) == (r2, d2)
        assert i2.pop("forfeited") is False
        assert i1 == i2


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_task_mode_is_deterministic(env_id, tmp_path):
    a = run_correct(make(env_id, tmp_path, trial_cost="task"), 5, {0: 2, 30: 1, 90: 4})
    b = run_correct(make(env_id, tmp_path, trial_cost="task"), 5, {0: 2, 30: 1, 90: 4})
    for (o1, r1, d1, i1), (o2, r2, d2, i2) in zip(a, b, strict=True):
        np.testing.assert_array_equal(o1, o2)
        assert (r1, d1, i1) == (r2, d2, i2)


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_check_env_passes_in_task_mode(env_id, tmp_path):
    env = make(env_id, tmp_path, trial_cost="task")
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/PreferenceStream-v0"])
@pytest.mark.parametrize("seed", [0, 1])
def test_tepa_full_pays_for_its_trials(env_id, seed, tmp_path):
    results = {}
    for mode in TRIAL_COSTS:
        env = make(env_id, tmp_path, trial_cost=mode)
        agent = MemoryAgent("tepa-full")
        _, info = env.reset(seed=seed)
        agent.reset(env, seed)
        successes, forfeits, owed, seen = [], 0, 0, 0
        terminated = False
        while not terminated:
            action = agent.act(info)
            spent = sum(env.unwrapped.trials_spent.values())
            owed, seen = owed + spent - seen, spent
            _, _, terminated, _, info = env.step(action)
            successes.append(info["success"])
            if mode == "task":
                assert info["forfeited"] is (owed > 0)  # each trial forfeits the next task
                if owed:
                    owed -= 1
                    forfeits += 1
                    assert info["success"] is False and info["evidence"] == []
            agent.learn(info)
        trials = sum(env.unwrapped.trials_spent.values())
        assert len(successes) == env.unwrapped.schedule.total
        if mode == "task":
            assert forfeits == env.unwrapped.tasks_forfeited
            assert forfeits > 0
            # every trial is paid with a task, except those the stream had no task left for
            assert forfeits + owed + (trials - seen) == trials
            assert forfeits <= min(trials, env.unwrapped.schedule.total)
        else:
            assert env.unwrapped.tasks_forfeited == 0
        results[mode] = float(np.mean(successes))
        env.close()
    assert results["task"] <= results["free"]


@pytest.mark.parametrize("env_id", STREAM_IDS)
@pytest.mark.parametrize("bad, error", [("paid", ValueError), ("Task", ValueError), ("", ValueError),
                                        (None, TypeError), (1, TypeError), (True, TypeError)])
def test_bad_trial_cost_is_refused_naming_the_field(env_id, bad, error, tmp_path):
    with pytest.raises(error, match="trial_cost"):
        make(env_id, tmp_path, trial_cost=bad)


def test_the_vector_env_accepts_trial_cost():
    free = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=3)
    task = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=3, trial_cost="task")
    o1, _ = free.reset(seed=0)
    o2, _ = task.reset(seed=0)
    np.testing.assert_array_equal(o1, o2)
    actions = np.array([0, 1, 2])
    for _ in range(10):
        s1, s2 = free.step(actions), task.step(actions)
        for a, b in zip(s1[:4], s2[:4]):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="trial_cost"):
        gym.make_vec("TEPA/RegimeDrift-v0", num_envs=2, trial_cost="paid")
