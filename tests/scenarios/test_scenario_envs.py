"""The registered drift scenarios and any schedule on TEPA/RegimeDrift: determinism across
processes, Gymnasium's checker, the native vector env against SyncVectorEnv, noisy
outcome rates, and bad schedule input refused with the field named."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import tepa_envs
from tepa_envs.core.drift import DriftSchedule, Segment, preset
from tepa_envs.regime_drift.env import RegimeDriftEnv
from tepa_envs.regime_drift.vector import RegimeDriftVectorEnv

SCENARIO_IDS = sorted(tepa_envs.SCENARIOS)
CUSTOM_SCHEDULES: dict[str, dict[str, Any]] = {
    "hazard+noise+zipf": {"segments": [{"length": 6, "name": "calm"}, {"length": 9, "hazard": 0.3, "name": "storm"},
                                       {"length": 5, "change": "return", "to": 0, "name": "home"}],
                          "p_hit": 0.8, "p_false": 0.2, "zipf": 1.5},
    "ramp+spread": {"segments": [{"length": 4}, {"length": 8, "change": "switch", "fraction": 0.5, "ramp": 6},
                                 {"length": 7, "change": "switch", "spread": 5}]},
}


def rollout(env_id: str, seed: int, **kwargs: Any) -> list[Any]:
    """Observations, rewards, keys, evidence and oracle of two episodes under a fixed random policy."""
    env = gym.make(env_id, **kwargs)
    policy = np.random.default_rng(123)
    trace: list[Any] = []
    for episode in range(2):
        obs, info = env.reset(seed=seed if episode == 0 else None)
        trace.append([obs.tolist(), info["key"], info["context"], info["oracle"]])
        done = False
        while not done:
            obs, reward, terminated, truncated, info = env.step(int(policy.integers(env.action_space.n)))
            evidence = [[e.key, e.value, e.t, e.outcome, e.source] for e in env.unwrapped.last_evidence]
            trace.append([obs.tolist(), reward, info["key"], evidence, info.get("oracle")])
            done = terminated or truncated
    env.close()
    return json.loads(json.dumps(trace))


# ------------------------------------------------------------------------ registration
def test_every_scenario_is_registered_with_the_regime_drift_entry_points():
    for env_id in SCENARIO_IDS:
        spec = gym.spec(env_id)
        assert spec.entry_point == "tepa_envs.regime_drift.env:RegimeDriftEnv"
        assert spec.vector_entry_point == "tepa_envs.regime_drift.vector:RegimeDriftVectorEnv"
        assert spec.kwargs == tepa_envs.SCENARIOS[env_id] and env_id in tepa_envs.ENV_IDS


def test_every_scenario_is_documented_in_the_env_docstring():
    doc = RegimeDriftEnv.__doc__ or ""
    section = doc.split("## Registered scenarios", 1)[1].split("## Action Space", 1)[0]
    for env_id, kwargs in tepa_envs.SCENARIOS.items():
        entry = " ".join(section.split(f"``{env_id}``", 1)[1].split("\n    * ", 1)[0].split())
        for name, value in kwargs.items():
            shown = f"{name}={value!r}" if isinstance(value, str) else (
                f"{name}={value}" if name != "phase_lengths" else "phases of 80 tasks")
            assert shown.replace("'", '"') in entry, f"{env_id}: {shown} not in its entry"


def test_scenarios_name_their_phases():
    names = {env_id: gym.make(env_id).unwrapped.schedule.names for env_id in SCENARIO_IDS}
    assert names["TEPA/RegimeDrift-Recurring-v0"] == ("regime_a", "regime_b", "back_to_a", "back_to_b")
    assert names["TEPA/RegimeDrift-Poisson-v0"] == ("stable", "random_1", "random_2", "random_3")
    assert names["TEPA/RegimeDrift-Noisy-v0"] == tepa_envs.PHASE_NAMES


# -------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("env_id", SCENARIO_IDS)
def test_same_seed_same_trajectory_and_another_seed_differs(env_id):
    assert rollout(env_id, 5) == rollout(env_id, 5)
    assert rollout(env_id, 5) != rollout(env_id, 6)


def test_every_scenario_gives_the_same_trajectories_in_another_process():
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            "import tepa_envs; from test_scenario_envs import rollout; "
            "print(json.dumps({i: rollout(i, 11) for i in sorted(tepa_envs.SCENARIOS)}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "77", "PATH": ""}).stdout
    assert json.loads(out) == {env_id: rollout(env_id, 11) for env_id in SCENARIO_IDS}


def test_the_default_env_is_the_paper_preset():
    assert rollout("TEPA/RegimeDrift-v0", 3, n_keys=3) == rollout("TEPA/RegimeDrift-v0", 3, n_keys=3,
                                                                 schedule="paper")
    assert rollout("TEPA/RegimeDrift-v0", 3) == rollout("TEPA/RegimeDrift-v0", 3, schedule=preset("paper"))
    assert rollout("TEPA/RegimeDrift-v0", 3) == rollout("TEPA/RegimeDrift-v0", 3,
                                                        schedule=preset("paper").to_dict())


# --------------------------------------------------------------------------- checkers
@pytest.mark.parametrize("env_id", SCENARIO_IDS)
def test_check_env_passes_with_warnings_as_errors(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(env_id).unwrapped)


@pytest.mark.parametrize("name", sorted(CUSTOM_SCHEDULES))
def test_check_env_passes_on_custom_schedules(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make("TEPA/RegimeDrift-v0", schedule=CUSTOM_SCHEDULES[name], n_keys=3).unwrapped)


# ------------------------------------------------------------------------- vector env
def _batched(infos: dict[str, Any]) -> dict[str, Any]:
    """What the native vector env batches of the default (fixed) schema: all but the free texts."""
    return {k: v for k, v in infos.items() if k.lstrip("_") not in ("context", "message")}


def _assert_infos_equal(native: dict[str, Any], sync: dict[str, Any], where: str) -> None:
    assert sorted(native) == sorted(sync), where
    for name, value in sync.items():
        if isinstance(value, dict):
            _assert_infos_equal(native[name], value, f"{where}/{name}")
        else:
            assert native[name].dtype == value.dtype, f"{where}/{name}"
            np.testing.assert_array_equal(native[name], value, err_msg=f"{where}/{name}")


def _compare(env_id: str, kwargs: dict[str, Any], num_envs: int, steps: int, seed: Any) -> None:
    native = gym.make_vec(env_id, num_envs=num_envs, **kwargs)
    sync = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="sync", **kwargs)
    assert isinstance(native.unwrapped, RegimeDriftVectorEnv)
    obs_n, info_n = native.reset(seed=seed)
    obs_s, info_s = sync.reset(seed=seed)
    np.testing.assert_array_equal(obs_n, obs_s)
    _assert_infos_equal(info_n, _batched(info_s), "reset")
    policy = np.random.default_rng(321)
    for step in range(steps):
        actions = policy.integers(0, native.single_action_space.n, size=num_envs)
        out_n, out_s = native.step(actions), sync.step(actions)
        for name, a, b in zip(("obs", "reward", "terminated", "truncated"), out_n[:4], out_s[:4]):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step} {name}")
            assert a.dtype == b.dtype
        _assert_infos_equal(out_n[4], _batched(out_s[4]), f"step {step}")
    native.close()
    sync.close()


@pytest.mark.parametrize("env_id", SCENARIO_IDS)
def test_the_vector_env_equals_sync_on_every_scenario(env_id):
    # short phases: 90 steps cross several episode ends, so NEXT_STEP autoreset is compared too
    _compare(env_id, {"phase_lengths": (6, 5, 7, 4)}, num_envs=4, steps=90, seed=3)


@pytest.mark.parametrize("name", sorted(CUSTOM_SCHEDULES))
def test_the_vector_env_equals_sync_on_custom_schedules(name):
    _compare("TEPA/RegimeDrift-v0", {"schedule": CUSTOM_SCHEDULES[name], "n_keys": 5, "n_tools": 4,
                                     "key_noise": 0.1}, num_envs=3, steps=70, seed=[8, 1, 5])


def test_the_vector_env_counts_the_extra_cells_of_timed_and_noisy_schedules():
    # 60,000 envs x (161 + 4 phases x 4 keys) cells fit under MAX_BATCH_CELLS (2 * 10**7); with
    # per-task correct tools and outcome draws, 60,000 x (3 x 161 + 1 phase x 4 keys) do not
    RegimeDriftVectorEnv(num_envs=60_000, n_keys=4)
    with pytest.raises(ValueError, match="MAX_BATCH_CELLS"):
        RegimeDriftVectorEnv(num_envs=60_000, n_keys=4, schedule={
            "segments": [{"length": 160, "hazard": 0.1}], "p_hit": 0.9})


# ---------------------------------------------------------------------------- outcomes
def _rates(schedule: Any, seeds: range) -> tuple[float, float, int, int]:
    """Success rate of the right tool and of a wrong one, over every task of ``seeds``."""
    hit = wrong = n_hit = n_wrong = 0
    for seed in seeds:
        for chooser in ("right", "wrong"):
            env = gym.make("TEPA/RegimeDrift-v0", schedule=schedule)
            _, info = env.reset(seed=seed)
            done = False
            while not done:
                correct = env.unwrapped.to_action(info["oracle"]["correct"])
                action = correct if chooser == "right" else (correct + 1) % 3
                _, reward, done, _, info = env.step(action)
                if chooser == "right":
                    hit += reward
                    n_hit += 1
                else:
                    wrong += reward
                    n_wrong += 1
    return hit / n_hit, wrong / n_wrong, n_hit, n_wrong


def test_noisy_outcomes_have_the_stated_rates():
    p_hit, p_false, n_hit, n_wrong = _rates("noisy", range(40))  # 6,400 tasks each
    assert abs(p_hit - 0.9) < 4 * np.sqrt(0.9 * 0.1 / n_hit)
    assert abs(p_false - 0.1) < 4 * np.sqrt(0.9 * 0.1 / n_wrong)
    custom = {"segments": [{"length": 500}], "p_hit": 0.6, "p_false": 0.25}
    p_hit, p_false, n_hit, n_wrong = _rates(custom, range(10))
    assert abs(p_hit - 0.6) < 4 * np.sqrt(0.6 * 0.4 / n_hit)
    assert abs(p_false - 0.25) < 4 * np.sqrt(0.25 * 0.75 / n_wrong)


def test_deterministic_schedules_never_fail_the_right_tool():
    assert _rates("paper", range(3))[:2] == (1.0, 0.0)


def test_noisy_outcomes_use_common_random_numbers_and_trials_are_noise_free():
    env = gym.make("TEPA/RegimeDrift-Noisy-v0").unwrapped
    _, info = env.reset(seed=4)
    draws = env.world.outcome_draw
    failures = 0
    for t in range(160):
        correct = info["oracle"]["correct"]
        assert env.trial("support", info["key"], correct) is True
        _, reward, _, _, info = env.step(env.to_action(correct))
        assert reward == float(draws[t] < 0.9)
        failures += reward == 0.0
        assert env.last_evidence[0].outcome is (reward == 1.0)
        assert info["evidence"]["outcome"] == int(reward == 1.0)
    assert failures > 0


# ------------------------------------------------------------------------- the oracle
def test_the_oracle_reports_the_task_correct_tool_under_ramps_and_hazards():
    for name in sorted(CUSTOM_SCHEDULES):
        env = gym.make("TEPA/RegimeDrift-v0", schedule=CUSTOM_SCHEDULES[name], n_keys=2).unwrapped
        _, info = env.reset(seed=1)
        for t in range(env.schedule.total):
            k = env.keys.index(info["key"])
            assert info["oracle"]["correct"] == env.values[env.world.tool(t, k)]
            assert info["oracle"]["phase_name"] == env.schedule.names[env.schedule.phase_of(t)]
            assert info["oracle"]["phase_changed"] == (t in env.schedule.starts[1:])
            _, _, _, _, info = env.step(0)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("schedule, error, match", [
    (3, TypeError, "schedule must be a preset name"),
    ("stormy", ValueError, "schedule must be one of paper"),
    ({"segmnets": []}, ValueError, "unknown schedule field.*segmnets"),
    ({"p_hit": 0.5}, ValueError, "needs 'segments'"),
    ({"segments": "abc"}, TypeError, "segments must be a list"),
    ({"segments": []}, ValueError, "segments must hold 1 to 1000"),
    ({"segments": [{"length": 3}] * 1001}, ValueError, "segments must hold 1 to 1000"),
    ({"segments": [5]}, TypeError, r"segments\[0\] must be an object"),
    ({"segments": [{"lenght": 5}]}, ValueError, r"unknown field.*'lenght' in segments\[0\]"),
    ({"segments": [{"change": "none"}]}, ValueError, r"segments\[0\] needs 'length'"),
    ({"segments": [{"length": 0}]}, ValueError, r"segments\[0\]\.length must be in \[1, 1000000\]"),
    ({"segments": [{"length": 2.5}]}, TypeError, r"segments\[0\]\.length must be an int"),
    ({"segments": [{"length": 4}, {"length": 4, "change": "flip"}]}, ValueError, r"segments\[1\]\.change must be one of"),
    ({"segments": [{"length": 4}, {"length": 4, "change": 1}]}, TypeError, r"segments\[1\]\.change must be a str"),
    ({"segments": [{"length": 4, "change": "switch"}]}, ValueError, r"segments\[0\]\.change must be 'none'"),
    ({"segments": [{"length": 4}, {"length": 4, "change": "switch", "fraction": 1.5}]}, ValueError,
     r"segments\[1\]\.fraction must be in \[0, 1\]"),
    ({"segments": [{"length": 4}, {"length": 4, "change": "switch", "fraction": "most"}]}, ValueError,
     r"segments\[1\]\.fraction must be a number in \[0, 1\] or 'all'"),
    ({"segments": [{"length": 4}, {"length": 4, "change": "return", "to": 1}]}, ValueError,
     r"segments\[1\]\.to must name an earlier segment"),
    ({"segments": [{"length": 4}, {"length": 4, "change": "switch", "to": 1}]}, ValueError,
     r"segments\[1\]\.to applies only to change 'return'"),
    ({"segments": [{"length": 4}, {"length": 4, "ramp": 2}]}, ValueError, r"segments\[1\]\.ramp needs a change"),
    ({"segments": [{"length": 4}, {"length": 4, "change": "switch", "ramp": -1}]}, ValueError,
     r"segments\[1\]\.ramp must be in"),
    ({"segments": [{"length": 4}, {"length": 4, "change": "switch", "spread": 4}]}, ValueError,
     r"segments\[1\]\.spread must be in \[0, 3\]"),
    ({"segments": [{"length": 4}, {"length": 4, "change": "switch", "spread": 2, "hazard": 0.1}]}, ValueError,
     r"segments\[1\]\.hazard cannot be combined with spread"),
    ({"segments": [{"length": 4, "hazard": 2.0}]}, ValueError, r"segments\[0\]\.hazard must be in \[0, 1\]"),
    ({"segments": [{"length": 4, "hazard": "often"}]}, TypeError, r"segments\[0\]\.hazard must be a number"),
    ({"segments": [{"length": 4, "name": "Stable!"}]}, ValueError, r"segments\[0\]\.name must be at most 64"),
    ({"segments": [{"length": 4, "name": "a"}, {"length": 4, "name": "a"}]}, ValueError, "names must be distinct"),
    ({"segments": [{"length": 10**6}] * 5}, ValueError, "MAX_TASKS"),
    ({"segments": [{"length": 4}], "p_hit": 1.5}, ValueError, r"p_hit must be in \[0, 1\]"),
    ({"segments": [{"length": 4}], "p_hit": "high"}, TypeError, "p_hit must be a number"),
    ({"segments": [{"length": 4}], "p_hit": 0.5, "p_false": 0.5}, ValueError, "p_false must be below p_hit"),
    ({"segments": [{"length": 4}], "zipf": -1.0}, ValueError, r"zipf must be in \[0, 10.0\]"),
    ({"segments": [{"length": 4}], "zipf": float("nan")}, ValueError, "zipf must be in"),
])
def test_bad_schedules_are_refused_naming_the_field(schedule, error, match):
    with pytest.raises(error, match=match):
        RegimeDriftEnv(schedule=schedule)


@pytest.mark.parametrize("kwargs, match", [
    ({"schedule": "recurring", "light_drift_fraction": 0.3}, "light_drift_fraction does not apply"),
    ({"schedule": "poisson", "partial_return_fraction": 1.0}, "partial_return_fraction does not apply"),
    ({"schedule": {"segments": [{"length": 5}]}, "phase_lengths": (5, 5, 5, 5)}, "phase_lengths applies to a named"),
    ({"schedule": {"segments": [{"length": 5}]}, "light_drift_fraction": 0.2}, "light_drift_fraction applies"),
])
def test_arguments_a_schedule_does_not_use_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RegimeDriftEnv(**kwargs)


def test_segments_and_schedules_validate_when_built_directly():
    with pytest.raises(ValueError, match=r"^length must be in"):
        Segment(0)
    with pytest.raises(TypeError, match=r"segments\[1\] must be a Segment"):
        DriftSchedule((Segment(3), {"length": 3}))
    with pytest.raises(TypeError, match="segments must be a tuple or list"):
        DriftSchedule(Segment(3))
    with pytest.raises(TypeError, match="schedule must be a mapping"):
        DriftSchedule.from_dict([{"length": 3}])


def test_a_custom_schedule_with_any_number_of_segments_runs_to_its_end():
    schedule = DriftSchedule(tuple(Segment(3, "switch" if i else "none", name=f"p{i}") for i in range(7)))
    env = gym.make("TEPA/RegimeDrift-v0", schedule=schedule, n_keys=2)
    _, info = env.reset(seed=0)
    phases, done, steps = [info["oracle"]["phase_name"]], False, 0
    while not done:
        _, _, done, truncated, info = env.step(0)
        steps += 1
        if not done:
            phases.append(info["oracle"]["phase_name"])
    assert steps == 21 and phases == [f"p{i}" for i in range(7) for _ in range(3)]
    assert len(env.unwrapped.regime_table()["summarize/finance/csv"]) == 7


def test_the_documented_schedule_snippet_runs_as_written():
    import re

    readme = (Path(__file__).resolve().parents[2] / "docs" / "environments" / "regime-drift.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if '"segments"' in b]
    namespace: dict[str, Any] = {"gym": gym}
    exec(compile(block, "docs/environments/regime-drift.md (schedule snippet)", "exec"), namespace)
    env = namespace["env"]
    env.reset(seed=0)
    assert env.unwrapped.schedule.names == ("calm", "migration", "churn", "rollback")
    assert env.unwrapped.drift.p_hit == 0.95
