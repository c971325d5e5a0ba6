"""View quality without a reader: each view's kind, shares per phase, uses to a correct view."""

from __future__ import annotations

import pytest

from tepa_envs.agents.evaluation.analysis.view_quality import (
    View, classify_all, pool_view_metrics, uses_to_correct_view, view_metrics,
)

PHASES = ("before", "after")


def v(shown: str, correct: str, phase: int = 0, key: str = "k") -> View:
    return View(key, phase, correct, tuple(shown.split()) if shown else ())


def test_each_kind_of_view():
    views = [v("a", "a"), v("a b", "a"),   # correct
             v("a", "b", 1), v("", "b", 1), v("a b", "b", 1), v("c b", "b", 1), v("c", "b", 1)]
    assert classify_all(views) == ["correct", "correct", "stale", "empty", "stale", "buried", "wrong"]


def test_a_value_correct_again_is_not_stale():
    views = [v("a", "a"), v("a", "b"), v("b", "a")]  # a -> b -> a: b is stale at the end, a is correct
    assert classify_all(views) == ["correct", "stale", "stale"]
    assert classify_all([v("a", "a"), v("b", "b"), v("a", "a")]) == ["correct", "correct", "correct"]


def test_keys_are_tracked_separately():
    views = [v("a", "a", key="x"), v("b", "b", key="y"), v("a", "c", key="x"), v("b", "b", key="y")]
    assert classify_all(views) == ["correct", "correct", "stale", "correct"]


def test_uses_to_a_correct_view_after_each_change():
    views = [v("a", "a"), v("a", "b"), v("a", "b"), v("b", "b"), v("b", "c"), v("b", "c")]
    delays, never = uses_to_correct_view(views, classify_all(views))
    assert delays == [2] and never == 1  # b shown correctly 2 uses after its change; c never
    instant = [v("a", "a"), v("b", "b")]
    assert uses_to_correct_view(instant, classify_all(instant)) == ([0], 0)


def test_shares_per_phase_and_overall():
    views = [v("a", "a"), v("a", "a"), v("a", "b", 1), v("", "b", 1), v("b", "b", 1), v("b", "b", 1)]
    metrics = view_metrics(views, PHASES)
    assert metrics["phases"]["before"]["correct_share"] == 1.0
    after = metrics["phases"]["after"]
    assert after == {"n": 4, "correct_share": 0.5, "stale_share": 0.25, "buried_share": 0.0, "empty_share": 0.25,
                     "wrong_share": 0.0, "refuted_1": 0, "refuted_2": 0, "persistence_1": None, "persistence_2": None}
    assert metrics["phases"]["overall"]["correct_share"] == pytest.approx(4 / 6)
    assert metrics["uses_to_correct_view"] == {"mean": 2.0, "median": 2.0, "never": 0}


def test_pooling_weights_by_views():
    one = view_metrics([v("a", "a")], PHASES)
    three = view_metrics([v("b", "a"), v("b", "a"), v("", "a")], PHASES)
    pooled = pool_view_metrics([one, three])
    assert pooled["phases"]["overall"]["n"] == 4
    assert pooled["phases"]["overall"]["correct_share"] == pytest.approx(0.25)
    assert pooled["phases"]["overall"]["empty_share"] == pytest.approx(0.25)


def test_persistence_counts_only_refuted_stale_values():
    """A stale value shown first after it failed twice since it last worked is kept;
    one that failed once only counts at level 1; a never-correct failure refutes nothing."""
    views = [View("k", 0, "a", ("a",)), View("k", 1, "b", ("a",), top_failures=1, refuted_failures=1),
             View("k", 1, "b", ("a",), top_failures=2, refuted_failures=2),
             View("k", 1, "b", ("b",), top_failures=0, refuted_failures=3),
             View("k", 1, "b", (), refuted_failures=0)]
    overall = view_metrics(views)["phases"]["overall"]
    assert (overall["refuted_1"], overall["persistence_1"]) == (3, pytest.approx(2 / 3))
    assert (overall["refuted_2"], overall["persistence_2"]) == (2, 0.5)
