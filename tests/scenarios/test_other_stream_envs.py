"""Drift schedules on FileOps and PreferenceStream: every kind of segment drives their
hidden values; the outcome model and key frequency, which these environments own, are refused."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401
from tepa_envs.file_ops.env import FileOpsEnv
from tepa_envs.preferences.env import PreferenceStreamEnv

ENVS = ("TEPA/FileOps-v0", "TEPA/PreferenceStream-v0")


@pytest.mark.parametrize("env_id", ENVS)
@pytest.mark.parametrize("schedule", ["gradual", "async", "recurring", "poisson"])
def test_check_env_passes_under_every_structural_preset(env_id, schedule):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(env_id, schedule=schedule)
        check_env(env.unwrapped)
        env.close()


def test_file_ops_csv_dialects_alternate_under_the_recurring_schedule():
    env = gym.make("TEPA/FileOps-v0", schedule="recurring", n_domains=3, phase_lengths=(5, 5, 5, 5))
    env.reset(seed=2)
    table = env.unwrapped.regime_table()
    for key, per_phase in table.items():
        if key.endswith("/csv"):
            a, b, a2, b2 = per_phase
            assert a != b and (a, b) == (a2, b2)
        else:
            assert len(set(per_phase)) == 1  # JSON consumers never change
    assert env.unwrapped.schedule.names == ("regime_a", "regime_b", "back_to_a", "back_to_b")
    env.close()


def test_preferences_change_at_random_points_under_the_poisson_schedule():
    env = gym.make("TEPA/PreferenceStream-v0", schedule="poisson").unwrapped
    env.reset(seed=0)
    changes_inside_phases = 0
    for key in env.keys:
        values = [env.preference(key, t) for t in range(160)]
        changes_inside_phases += sum(values[t] != values[t - 1] for t in range(1, 160) if t not in (40, 80, 120))
        assert values[:40] == [values[0]] * 40  # the stable phase has no hazard
    assert changes_inside_phases > 0


def test_a_custom_schedule_drives_the_preferences_and_the_oracle():
    schedule = {"segments": [{"length": 10, "name": "before"},
                             {"length": 12, "change": "switch", "ramp": 4, "name": "migration"}]}
    env = gym.make("TEPA/PreferenceStream-v0", schedule=schedule).unwrapped
    _, info = env.reset(seed=5)
    for t in range(22):
        assert info["oracle"]["correct"] == env.preference(info["key"], t)
        assert info["oracle"]["phase_name"] == ("before" if t < 10 else "migration")
        _, _, done, _, info = env.step(0)
    assert done


@pytest.mark.parametrize("cls, name", [(FileOpsEnv, "TEPA/FileOps-v0"),
                                       (PreferenceStreamEnv, "TEPA/PreferenceStream-v0")])
@pytest.mark.parametrize("schedule, field", [
    ("noisy", "p_hit"), ("zipf", "zipf"),
    ({"segments": [{"length": 9}], "p_false": 0.1}, "p_false"),
])
def test_outcome_noise_and_zipf_are_refused(cls, name, schedule, field):
    with pytest.raises(ValueError, match=f"^{field} does not apply to {name}"):
        cls(schedule=schedule)


@pytest.mark.parametrize("cls", [FileOpsEnv, PreferenceStreamEnv])
def test_a_bad_schedule_is_refused_naming_the_field(cls):
    with pytest.raises(ValueError, match=r"segments\[1\]\.spread must be in \[0, 4\]"):
        cls(schedule={"segments": [{"length": 5}, {"length": 5, "change": "switch", "spread": 9}]})
    with pytest.raises(ValueError, match="phase_lengths applies to a named schedule only"):
        cls(schedule={"segments": [{"length": 5}]}, phase_lengths=(5, 5, 5, 5))


def test_file_ops_counts_the_records_of_a_custom_schedule():
    with pytest.raises(ValueError, match="max_records"):
        FileOpsEnv(schedule={"segments": [{"length": 10**6}] * 2}, max_records=1)
    env = FileOpsEnv(schedule={"segments": [{"length": 7}, {"length": 3, "change": "switch"}]})
    env.reset(seed=0)
    assert len(env.task_is_csv) == 10 and np.all(env.csv_regime[1] != env.csv_regime[0])
    env.close()
