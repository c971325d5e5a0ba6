"""TEPA's named implementation choices: each value's documented behaviour on a
minimal stream where the settings part, the presets, and argument validation."""

import dataclasses

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents import MemoryAgent, TEPAFull, make_memory, run_episode
from tepa_envs.agents.memories import METHOD_NAMES, PAPER_READINGS, TEPA, TEPA_PRESETS, TEPAChoices, TEPAPaper
from tepa_envs.agents.memories.tepa_choices import CHOICE_NAMES, CHOICE_VALUES
from tepa_envs.core import Evidence, LifecycleState

ACTIVE, HYPOTHESIS, REVOKED = LifecycleState.ACTIVE, LifecycleState.HYPOTHESIS, LifecycleState.REVOKED
KEY = "summarize/finance/csv"

V0 = dict(theta_prop_fresh=1, assertion_supersedes=True, window_outcomes="own_uses", failed_candidate="discard",
          assertions_in_window=False, window_seed="proposing_outcome", revoke_check="after_conflict",
          tie_break="recently_updated", candidate_counting="cumulative")
PAPER = dict(theta_prop_fresh=3, assertion_supersedes=False, window_outcomes="support_and_conflict",
             failed_candidate="count", assertions_in_window=False, window_seed="candidate_history",
             revoke_check="after_every_update", tie_break="first_created", candidate_counting="cumulative")


def play(memory, steps):
    """Feed ``steps``: (value, outcome) pairs, outcome ``True``/``False`` or ``None`` (an assertion)."""
    for t, (value, outcome) in enumerate(steps):
        memory.observe(Evidence(KEY, value, t, outcome, "test"))
    return memory


def shown(memory):
    return [r.value for r in memory.retrieve(KEY)]


def reasons(memory):
    return [(e.value, e.to_state, e.t, e.reason) for e in memory.audit_log]


def ok(value, n=1):
    return [(value, True)] * n


def fail(value, n=1):
    return [(value, False)] * n


def said(value, n=1):
    return [(value, None)] * n


# ------------------------------------------------------------------- presets
def test_v0_is_the_default_and_resolves_to_todays_choices():
    assert TEPA().choices == TEPA(preset="v0").choices == TEPAChoices(**V0)
    assert TEPA().preset == "v0"


def test_paper_preset_resolves_as_documented_with_a_reason_for_every_reading():
    assert TEPA(preset="paper").choices == TEPAPaper().choices == TEPAChoices(**PAPER)
    assert set(PAPER_READINGS) == set(CHOICE_NAMES)
    assert TEPAPaper().name == "tepa-paper" and TEPAPaper().preset == "paper"


def test_paper_preset_proposes_fresh_keys_at_theta_prop_whatever_it_is():
    assert TEPA(preset="paper", theta_prop=5).choices.theta_prop_fresh == 5
    assert TEPA(preset="paper", theta_prop=5).theta_prop_fresh == 5


def test_explicit_arguments_override_the_preset_one_by_one():
    for name in CHOICE_NAMES:
        base = TEPA(preset="paper").choices
        other = V0[name] if V0[name] != PAPER[name] else _another(name, PAPER[name])
        memory = TEPA(preset="paper", **{name: other})
        assert getattr(memory.choices, name) == other
        assert memory.choices.differences(base) == {name: (other, PAPER[name])}
    assert TEPAPaper(tie_break="recently_updated").choices.tie_break == "recently_updated"


def _another(name, value):
    if name in CHOICE_VALUES:
        return next(v for v in CHOICE_VALUES[name] if v != value)
    if isinstance(value, bool):
        return not value
    return value + 1


def test_choices_are_frozen_and_printable():
    choices = TEPA().choices
    with pytest.raises(dataclasses.FrozenInstanceError):
        choices.tie_break = "first_created"
    assert choices.as_dict() == V0
    assert TEPA(preset="paper").choices.differences(choices) == {
        k: (PAPER[k], V0[k]) for k in V0 if PAPER[k] != V0[k]}


def test_every_alternative_value_is_accepted():
    for name, values in CHOICE_VALUES.items():
        for value in values:
            assert getattr(TEPA(**{name: value}).choices, name) == value


# --------------------------------------------------------------- validation
@pytest.mark.parametrize("kwargs, error, named", [
    ({"preset": "paper2"}, ValueError, "preset"),
    ({"preset": 1}, TypeError, "preset"),
    ({"window_outcomes": "key"}, ValueError, "window_outcomes"),
    ({"window_outcomes": 1}, TypeError, "window_outcomes"),
    ({"failed_candidate": "drop"}, ValueError, "failed_candidate"),
    ({"failed_candidate": True}, TypeError, "failed_candidate"),
    ({"assertions_in_window": 1}, TypeError, "assertions_in_window"),
    ({"assertions_in_window": "yes"}, TypeError, "assertions_in_window"),
    ({"window_seed": "supports"}, ValueError, "window_seed"),
    ({"revoke_check": "always"}, ValueError, "revoke_check"),
    ({"tie_break": "score"}, ValueError, "tie_break"),
    ({"tie_break": ["updated"]}, TypeError, "tie_break"),
    ({"candidate_counting": "run"}, ValueError, "candidate_counting"),
    ({"theta_prop_fresh": 0}, ValueError, "theta_prop_fresh"),
    ({"theta_prop_fresh": 1.5}, TypeError, "theta_prop_fresh"),
    ({"theta_prop_fresh": True}, TypeError, "theta_prop_fresh"),
    ({"assertion_supersedes": 0}, TypeError, "assertion_supersedes"),
])
def test_bad_choices_are_refused_naming_the_argument_and_change_nothing(kwargs, error, named):
    memory = play(TEPA(), ok("tool_0", 2) + ok("tool_1"))
    before = (memory.choices, memory.retrieve(KEY), memory.audit_log, memory.precedents())
    presets = {name: dict(values) for name, values in TEPA_PRESETS.items()}
    with pytest.raises(error, match=named):
        TEPA(**kwargs)
    with pytest.raises(error, match=named):
        TEPAFull(**kwargs)
    assert (memory.choices, memory.retrieve(KEY), memory.audit_log, memory.precedents()) == before
    assert {name: dict(values) for name, values in TEPA_PRESETS.items()} == presets


def test_bad_choice_through_make_memory_names_the_method():
    with pytest.raises(ValueError, match="tie_break"):
        make_memory("tepa-paper", tie_break="nope")
    with pytest.raises(TypeError, match="preset"):
        make_memory("tepa-paper", preset="v0")


def test_presets_and_choices_cannot_be_altered():
    with pytest.raises(TypeError):
        TEPA_PRESETS["v0"]["tie_break"] = "first_created"  # type: ignore[index]
    with pytest.raises(TypeError):
        TEPAChoices(**{**V0, "bogus": 1})


# ------------------------------------------------------- each choice, two ways
def test_theta_prop_fresh():
    one, three = TEPA(), TEPA(theta_prop_fresh=3)
    for memory in (one, three):
        play(memory, ok("tool_0", 2))
    assert shown(one) == ["tool_0"]  # proposed and promoted on the first support
    assert shown(three) == [] and three.audit_log == ()  # still a candidate with 2 of 3 supports
    three.observe(Evidence(KEY, "tool_0", 2, True, "test"))
    assert shown(three) == ["tool_0"]


def test_assertion_supersedes():
    yes, no = TEPA(), TEPA(assertion_supersedes=False)
    for memory in (yes, no):
        play(memory, said("Paris") + said("Rome"))
    assert shown(yes) == ["Rome"]  # Paris revoked at once; Rome proposed for the now bare key
    assert reasons(yes)[2] == ("Paris", REVOKED, 1, "superseded by assertion of 'Rome'")
    (paris,) = no.retrieve(KEY)  # one conflict; Rome, a challenger, needs theta_prop supports
    assert (paris.value, paris.support, paris.conflict) == ("Paris", 1, 1)
    assert len(no.audit_log) == 2  # Paris proposed and promoted; nothing revoked


def test_window_outcomes():
    own, counted = TEPA(), TEPA(window_outcomes="support_and_conflict")
    for memory in (own, counted):
        play(memory, ok("tool_0") + ok("tool_1", 2))
    # own_uses: tool_0's window is [hit] (the competitor's successes are conflicts only).
    (record,) = own.retrieve(KEY)
    assert (record.value, record.support, record.conflict) == ("tool_0", 1, 2)
    # support_and_conflict: [hit, miss, miss] -> 0.33 < theta_rec; tool_1 then proposed for a bare key.
    assert shown(counted) == ["tool_1"]
    assert reasons(counted)[2] == ("tool_0", REVOKED, 2,
                                   "recent success 0.33 < theta_rec 0.34 over last 3 outcomes")


def test_failed_candidate():
    stream = ok("tool_0", 5) + ok("tool_1", 2) + fail("tool_1") + ok("tool_1")
    discard, count, ignore = (play(TEPA(failed_candidate=mode), stream) for mode in ("discard", "count", "ignore"))
    assert shown(discard) == ["tool_0"]  # the failure dropped tool_1's 2 supports: 1 of 3 now
    (new, _), (new_ignored, _) = count.retrieve(KEY), ignore.retrieve(KEY)
    assert (new.value, new.support, new.conflict) == ("tool_1", 3, 1)  # proposed with its failure
    assert (new_ignored.value, new_ignored.support, new_ignored.conflict) == ("tool_1", 3, 0)
    assert reasons(count)[2][3] == "proposed after 3 supports and 1 failure"
    assert reasons(ignore)[2][3] == "proposed after 3 supports"


def test_failed_candidate_count_makes_a_hypothesis_that_is_not_retrieved():
    count = play(TEPA(failed_candidate="count"), fail("tool_0", 2) + ok("tool_0"))
    (record,) = count.precedents(KEY)
    assert (record.support, record.conflict, record.state) == (1, 2, HYPOTHESIS)  # q = 2/5 < theta_pro
    assert shown(count) == []
    assert shown(play(TEPA(), fail("tool_0", 2) + ok("tool_0"))) == ["tool_0"]


def test_assertions_in_window():
    stream = ok("tool_0") + fail("tool_0") + said("tool_0", 2) + fail("tool_0")
    outside, inside = TEPA(), TEPA(assertions_in_window=True)
    for memory in (outside, inside):
        play(memory, stream)
    assert shown(outside) == []  # window [hit, miss, miss]
    assert reasons(outside)[-1][1:3] == (REVOKED, 4)
    assert shown(inside) == ["tool_0"]  # window [hit, hit, miss]: the assertions count as hits


def test_window_seed():
    stream = ok("tool_0", 3) + fail("tool_0")
    proposing = play(TEPA(theta_prop_fresh=3, theta_rec=0.7), stream)
    history = play(TEPA(theta_prop_fresh=3, theta_rec=0.7, window_seed="candidate_history"), stream)
    assert shown(proposing) == ["tool_0"]  # window [hit, miss]: not full yet
    assert shown(history) == []  # window [hit, hit, miss] = 0.67 < 0.7
    assert reasons(history)[-1][3] == "recent success 0.67 < theta_rec 0.7 over last 3 outcomes"


def test_window_seed_carries_counted_failures():
    stream = fail("tool_0", 2) + ok("tool_0")
    kwargs = dict(failed_candidate="count", theta_pro=0.0, revoke_check="after_every_update")
    history = play(TEPA(window_seed="candidate_history", **kwargs), stream)
    proposing = play(TEPA(**kwargs), stream)
    # proposed at t=2 with window [miss, miss, hit] = 0.33 and revoked at once; or with [hit], kept.
    assert [e[1:3] for e in reasons(history)] == [(HYPOTHESIS, 2), (REVOKED, 2)]
    assert shown(proposing) == ["tool_0"]


def test_revoke_check():
    stream = ok("tool_0") + fail("tool_0", 2) + ok("tool_0")
    kwargs = dict(n_rec=4, theta_rec=0.6)
    conflict = play(TEPA(**kwargs), stream)
    every = play(TEPA(revoke_check="after_every_update", **kwargs), stream)
    assert shown(conflict) == ["tool_0"]  # window [hit, miss, miss, hit] = 0.5, but only a support filled it
    assert shown(every) == []
    assert reasons(every)[-1][1:] == (REVOKED, 3, "recent success 0.50 < theta_rec 0.6 over last 4 outcomes")


def _tie_break_orders(stream):
    return {mode: [r.value for r in play(TEPA(theta_prop=1, tie_break=mode), stream).retrieve(KEY)]
            for mode in CHOICE_VALUES["tie_break"]}


def test_tie_break_when_the_newer_precedent_was_updated_last():
    # first (1, 1) updated at t=1; second (1, 1) updated at t=2: both q = 0.5
    assert _tie_break_orders(ok("first") + ok("second") + fail("second")) == {
        "recently_updated": ["second", "first"], "first_created": ["first", "second"],
        "last_created": ["second", "first"]}


def test_tie_break_when_the_older_precedent_was_updated_last():
    # first (5, 2) q = 6/9 updated at t=6; second (1, 0) q = 2/3 updated at t=5
    assert _tie_break_orders(ok("first", 5) + ok("second") + fail("first")) == {
        "recently_updated": ["first", "second"], "first_created": ["first", "second"],
        "last_created": ["second", "first"]}


def test_candidate_counting():
    stream = ok("tool_0", 5) + ok("tool_1") + ok("tool_2") + ok("tool_1", 2)
    cumulative = play(TEPA(), stream)
    consecutive = play(TEPA(candidate_counting="consecutive"), stream)
    assert shown(cumulative) == ["tool_1", "tool_0"]  # tool_1's 3 supports, with tool_2's between
    assert shown(consecutive) == ["tool_0"]  # tool_2's success broke tool_1's run: 2 in a row
    consecutive.observe(Evidence(KEY, "tool_1", 9, True, "test"))
    assert shown(consecutive) == ["tool_1", "tool_0"]


# ------------------------------------------------------ Hypothesis and theta_pro
@settings(max_examples=60, deadline=None)
@given(raw=st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from([True, False, None])),
                    min_size=1, max_size=50))
def test_with_v0_every_proposal_is_promoted_in_the_same_step(raw):
    memory = play(TEPA(), raw)
    log = memory.audit_log
    for i, event in enumerate(log):
        if event.to_state is HYPOTHESIS:
            promoted = log[i + 1]
            assert (promoted.precedent_id, promoted.from_state, promoted.to_state, promoted.t) == (
                event.precedent_id, HYPOTHESIS, ACTIVE, event.t)


def test_theta_pro_above_two_thirds_keeps_a_fresh_proposal_a_hypothesis():
    memory = play(TEPA(theta_pro=0.7), ok("tool_0"))
    (record,) = memory.precedents(KEY)
    assert (record.state, round(record.score, 3)) == (HYPOTHESIS, 0.667)
    assert shown(memory) == []
    memory.observe(Evidence(KEY, "tool_0", 1, True, "test"))  # q = 3/4 >= 0.7
    assert shown(memory) == ["tool_0"]
    assert [e.to_state for e in memory.audit_log] == [HYPOTHESIS, ACTIVE]


def test_tepa_full_trials_keep_a_proposal_a_hypothesis():
    memory = TEPAFull()
    memory.bind_trial(lambda kind, key, value: False)
    play(memory, ok("tool_0"))
    assert [p.state for p in memory.precedents(KEY)] == [HYPOTHESIS] and shown(memory) == []


# --------------------------------------------------------- the shipped method
def test_tepa_paper_is_registered_after_tepa_full():
    names = list(METHOD_NAMES)
    assert names.index("tepa-paper") == names.index("tepa-full") + 1
    assert names[names.index("tepa-paper") + 1] == "lww-validation"
    assert isinstance(make_memory("tepa-paper"), TEPAPaper)


def test_tepa_paper_runs_a_regime_drift_episode():
    result = run_episode(gym.make("TEPA/RegimeDrift-v0"), MemoryAgent("tepa-paper"), seed=0)
    assert result.success.size > 0 and 0.0 < result.success.mean() <= 1.0
    again = run_episode(gym.make("TEPA/RegimeDrift-v0"), MemoryAgent(TEPA(preset="paper")), seed=0)
    assert (again.success == result.success).all()
