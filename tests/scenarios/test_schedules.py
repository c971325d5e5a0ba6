"""Drift schedules as data: each kind of change gives the exact value sequence its
documentation states, draws in the documented order, and the paper preset draws
exactly what the four-phase code drew before schedules were data."""

from __future__ import annotations

import numpy as np
import pytest

from tepa_envs.core.drift import (
    PRESETS,
    DriftSchedule,
    Segment,
    draw_timeline,
    four_phase,
    preset,
)
from tepa_envs.core.schedule import PhaseSchedule, changed_count, draw_phase_values


def values_over_time(timeline, n_keys, ramp_draw=None):
    """Every key's value at every task, shape (n_keys, total)."""
    total = timeline.schedule.total
    return np.array([[timeline.value(t, k, ramp_draw) for t in range(total)] for k in range(n_keys)])


def legacy_draw_phase_values(rng, n_keys, n_values, light_fraction, return_fraction):
    """The four-phase drawing code as it was before schedules were data (copied verbatim)."""
    def other(excluded):
        options = [v for v in range(n_values) if v not in excluded]
        return int(options[int(rng.integers(len(options)))])

    values = np.empty((4, n_keys), dtype=np.int64)
    values[0] = rng.integers(0, n_values, size=n_keys)
    values[1] = values[0]
    light = rng.choice(n_keys, size=changed_count(light_fraction, n_keys), replace=False)
    for k in light:
        values[1, k] = other({int(values[0, k])})
    for k in range(n_keys):
        excluded = {int(values[0, k]), int(values[1, k])}
        if len(excluded) >= n_values:
            excluded = {int(values[1, k])}
        values[2, k] = other(excluded)
    values[3] = values[2]
    back = rng.choice(n_keys, size=changed_count(return_fraction, n_keys), replace=False)
    values[3, back] = values[0, back]
    return values


# ---------------------------------------------------------------- the paper's four phases
@pytest.mark.parametrize("n_keys", [1, 2, 5, 12])
@pytest.mark.parametrize("n_values", [2, 3, 4, 7])
@pytest.mark.parametrize("fractions", [(0.0, 0.0), (0.5, 0.5), (0.3, 1.0), (1.0, 0.25)])
def test_the_paper_preset_draws_what_the_four_phase_code_drew(n_keys, n_values, fractions):
    legacy, new = np.random.default_rng(17), np.random.default_rng(17)
    for _ in range(3):  # several worlds in a row: the generators stay in step
        expected = legacy_draw_phase_values(legacy, n_keys, n_values, *fractions)
        np.testing.assert_array_equal(draw_phase_values(new, n_keys, n_values, *fractions), expected)
        assert legacy.bit_generator.state == new.bit_generator.state


def test_the_paper_preset_has_the_four_phases():
    schedule = preset("paper", (3, 4, 5, 6), 0.25, 0.75)
    assert schedule.names == ("stable", "light_drift", "full_reversal", "partial_return")
    assert schedule.lengths == (3, 4, 5, 6) and schedule.total == 18 and schedule.starts == (0, 3, 7, 12)
    assert [s.change for s in schedule.segments] == ["none", "switch", "switch", "return"]
    assert [s.fraction for s in schedule.segments][1:] == [0.25, "all", 0.75]
    assert not schedule.timed and not schedule.noisy and schedule.zipf == 0.0
    assert schedule.reversal_phases() == ("full_reversal",)
    assert schedule == four_phase((3, 4, 5, 6), 0.25, 0.75)


# ------------------------------------------------------------------ switch, return, none
def test_switch_goes_to_a_value_never_held_then_to_another_than_the_current():
    # Three values, one key: A, then two switches exhaust the values, then a third switch
    # may only avoid the current value; draws as documented, replayed on a twin generator.
    schedule = DriftSchedule(tuple(Segment(2, "switch" if i else "none") for i in range(4)))
    rng, twin = np.random.default_rng(5), np.random.default_rng(5)
    timeline = draw_timeline(rng, schedule, 1, 3)
    a = int(twin.integers(0, 3, size=1)[0])
    b = [v for v in range(3) if v != a][int(twin.integers(2))]
    (c,) = [v for v in range(3) if v not in (a, b)]
    assert int(twin.integers(1)) == 0  # one option: the draw is still made
    d = [v for v in range(3) if v != c][int(twin.integers(2))]
    assert timeline.values[:, 0].tolist() == [a, b, c, d]
    assert values_over_time(timeline, 1)[0].tolist() == [a, a, b, b, c, c, d, d]
    assert len({a, b, c}) == 3 and d != c
    assert rng.bit_generator.state == twin.bit_generator.state


def test_return_goes_back_to_the_named_segment_and_none_keeps_the_values():
    schedule = DriftSchedule((Segment(1), Segment(1, "switch"), Segment(1, "switch"), Segment(1),
                              Segment(1, "return", to=1), Segment(1, "return", to=0)))
    timeline = draw_timeline(np.random.default_rng(0), schedule, 4, 6)
    v = timeline.values
    np.testing.assert_array_equal(v[3], v[2])
    np.testing.assert_array_equal(v[4], v[1])
    np.testing.assert_array_equal(v[5], v[0])
    assert np.all(v[1] != v[0]) and np.all(v[2] != v[1]) and np.all(v[2] != v[0])


def test_a_fraction_changes_that_many_keys_chosen_by_the_documented_draw():
    schedule = DriftSchedule((Segment(3), Segment(3, "switch", 0.5)))
    rng, twin = np.random.default_rng(9), np.random.default_rng(9)
    timeline = draw_timeline(rng, schedule, 6, 4)
    twin.integers(0, 4, size=6)
    chosen = twin.choice(6, size=changed_count(0.5, 6), replace=False)
    changed = np.flatnonzero(timeline.values[1] != timeline.values[0])
    assert sorted(changed.tolist()) == sorted(chosen.tolist()) and changed.size == 3


@pytest.mark.parametrize("fraction, changed", [(0.0, 0), (0.01, 1), (0.5, 4), (1.0, 8), ("all", 8)])
def test_changed_count_of_a_fraction(fraction, changed):
    schedule = DriftSchedule((Segment(1), Segment(1, "switch", fraction)))
    timeline = draw_timeline(np.random.default_rng(1), schedule, 8, 3)
    assert int(np.sum(timeline.values[1] != timeline.values[0])) == changed


# -------------------------------------------------------------------------- recurring
def test_recurring_alternates_every_key_between_two_values():
    timeline = draw_timeline(np.random.default_rng(2), preset("recurring", (2, 3, 2, 3)), 5, 3)
    a, b = timeline.values[0], timeline.values[1]
    assert np.all(a != b)
    expected = np.concatenate([np.repeat(a[:, None], 2, 1), np.repeat(b[:, None], 3, 1),
                               np.repeat(a[:, None], 2, 1), np.repeat(b[:, None], 3, 1)], axis=1)
    np.testing.assert_array_equal(values_over_time(timeline, 5), expected)
    assert preset("recurring").names == ("regime_a", "regime_b", "back_to_a", "back_to_b")
    assert preset("recurring").reversal_phases() == ("regime_b", "back_to_a", "back_to_b")


# ---------------------------------------------------------------------------- gradual
def test_a_ramp_makes_the_new_value_correct_with_probability_rising_to_one():
    ramp = 4
    schedule = DriftSchedule((Segment(3), Segment(8, "switch", ramp=ramp)))
    timeline = draw_timeline(np.random.default_rng(3), schedule, 1, 3)
    old, new = int(timeline.values[0, 0]), int(timeline.values[1, 0])
    draw = np.array([0.0, 0.0, 0.0, 0.1, 0.3, 0.5, 0.79, 0.0, 0.99, 0.99, 0.99])
    # task 3 + i (i < ramp): new iff draw < (i + 1) / (ramp + 1) = 0.2, 0.4, 0.6, 0.8; then always new
    expected = [old, old, old, new, new, new, new, new, new, new, new]
    assert values_over_time(timeline, 1, draw)[0].tolist() == expected
    draw[3:7] = [0.2, 0.4, 0.6, 0.8]  # at the threshold: still the old value
    assert values_over_time(timeline, 1, draw)[0].tolist() == [old] * 7 + [new] * 4


def test_the_ramp_frequency_matches_the_stated_probabilities():
    ramp, seeds = 5, 4000
    schedule = DriftSchedule((Segment(1), Segment(ramp + 1, "switch", ramp=ramp)))
    hits = np.zeros(ramp)
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        timeline = draw_timeline(rng, schedule, 1, 3)
        draw = schedule.draw_ramp(rng)
        hits += [timeline.value(1 + i, 0, draw) == timeline.values[1, 0] for i in range(ramp)]
    expected = (np.arange(ramp) + 1) / (ramp + 1)
    assert np.all(np.abs(hits / seeds - expected) < 4 * np.sqrt(expected * (1 - expected) / seeds))


def test_the_gradual_preset_ramps_over_half_of_each_phase():
    schedule = preset("gradual", (40, 40, 30, 7))
    assert [s.ramp for s in schedule.segments] == [0, 20, 15, 3]
    assert schedule.has_ramp and schedule.timed


# ----------------------------------------------------------------------------- async
def test_spread_changes_each_chosen_key_at_its_drawn_offset():
    schedule = DriftSchedule((Segment(4), Segment(10, "switch", spread=6)))
    rng, twin = np.random.default_rng(11), np.random.default_rng(11)
    timeline = draw_timeline(rng, schedule, 3, 5)
    initial = twin.integers(0, 5, size=3)
    news = [[v for v in range(5) if v != initial[k]][int(twin.integers(4))] for k in range(3)]
    offsets = twin.integers(0, 7, size=3)
    for k in range(3):
        expected = [initial[k]] * (4 + offsets[k]) + [news[k]] * (10 - offsets[k])
        assert values_over_time(timeline, 3)[k].tolist() == expected
    assert rng.bit_generator.state == twin.bit_generator.state


def test_the_async_preset_spreads_changes_over_the_first_half_of_each_phase():
    assert [s.spread for s in preset("async").segments] == [0, 20, 20, 20]


# ----------------------------------------------------------------- random change points
def test_hazard_changes_at_geometric_gaps_to_another_value():
    hazard = 0.2
    schedule = DriftSchedule((Segment(5), Segment(30, hazard=hazard)))
    rng, twin = np.random.default_rng(4), np.random.default_rng(4)
    timeline = draw_timeline(rng, schedule, 2, 3)
    current = list(twin.integers(0, 3, size=2))
    expected = [[int(current[k])] * 35 for k in range(2)]
    for k in range(2):
        offset = 0
        while True:
            offset += int(twin.geometric(hazard))
            if offset >= 30:
                break
            current[k] = [v for v in range(3) if v != current[k]][int(twin.integers(2))]
            expected[k][5 + offset:] = [current[k]] * (30 - offset)
    assert values_over_time(timeline, 2).tolist() == expected
    assert rng.bit_generator.state == twin.bit_generator.state


def test_hazard_gives_the_stated_rate_of_change():
    hazard, length, seeds = 0.05, 200, 300
    schedule = DriftSchedule((Segment(1), Segment(length, hazard=hazard)))
    changes = 0
    for seed in range(seeds):
        values = values_over_time(draw_timeline(np.random.default_rng(seed), schedule, 1, 4), 1)[0]
        changes += int(np.sum(values[1:] != values[:-1]))
    expected = seeds * (length - 1) * hazard
    assert abs(changes - expected) < 4 * np.sqrt(expected)


def test_the_poisson_preset_has_one_change_per_key_per_phase_on_average():
    schedule = preset("poisson", (40, 40, 40, 40))
    assert schedule.names == ("stable", "random_1", "random_2", "random_3")
    assert [s.hazard for s in schedule.segments] == [0.0, 1 / 40, 1 / 40, 1 / 40]
    assert schedule.reversal_phases() == ()


# ------------------------------------------------------------------------------ keys
def test_zipf_keys_follow_the_stated_weights_and_draw():
    schedule = preset("zipf")
    weights = schedule.key_weights(4)
    np.testing.assert_allclose(weights, np.array([1, 1 / 2, 1 / 3, 1 / 4]) / (25 / 12))
    rng, twin = np.random.default_rng(8), np.random.default_rng(8)
    keys = schedule.draw_task_keys(rng, 4, 20_000)
    np.testing.assert_array_equal(keys, twin.choice(4, size=20_000, p=weights))
    frequency = np.bincount(keys, minlength=4) / keys.size
    assert np.all(np.abs(frequency - weights) < 4 * np.sqrt(weights * (1 - weights) / keys.size))


def test_uniform_keys_draw_as_before():
    rng, twin = np.random.default_rng(8), np.random.default_rng(8)
    np.testing.assert_array_equal(preset("paper").draw_task_keys(rng, 5, 100), twin.integers(0, 5, size=100))


# --------------------------------------------------------------------- draws on demand
def test_features_draw_only_when_the_schedule_uses_them():
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    assert preset("paper").draw_ramp(rng) is None and preset("paper").draw_outcomes(rng) is None
    assert rng.bit_generator.state == state
    assert preset("noisy").draw_outcomes(rng).shape == (160,)
    assert preset("gradual").draw_ramp(rng).shape == (160,)


def test_every_preset_builds_and_round_trips_through_its_dict_form():
    for name, entry in PRESETS.items():
        schedule = preset(name, (5, 6, 7, 8))
        assert schedule.names == entry.phase_names and schedule.total == 26
        assert DriftSchedule.from_dict(schedule.to_dict()) == schedule
    assert preset("noisy").p_hit == 0.9 and preset("noisy").p_false == 0.1


def test_phase_schedule_of_a_drift_schedule_names_its_phases():
    phases = PhaseSchedule.of(preset("recurring", (2, 2, 2, 2)))
    assert phases.names == ("regime_a", "regime_b", "back_to_a", "back_to_b")
    assert [phases.name_of(t) for t in range(8)] == ["regime_a"] * 2 + ["regime_b"] * 2 + ["back_to_a"] * 2 + \
        ["back_to_b"] * 2
    assert [phases.starts_phase(t) for t in range(8)] == [False, False, True, False, True, False, True, False]
