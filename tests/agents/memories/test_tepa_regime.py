"""TEPA-Regime: the cross-key regime alarm, probation, audit and re-promotion."""

from __future__ import annotations

import gymnasium as gym
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tepa_envs  # noqa: F401
from tepa_envs.agents import TEPA, MemoryAgent, make_memory, replay_audit, run_episode
from tepa_envs.agents.memories.tepa_regime import TEPARegime
from tepa_envs.core import Evidence, LifecycleState

ACTIVE, REVOKED = LifecycleState.ACTIVE, LifecycleState.REVOKED
K = ["a/x/csv", "b/y/json", "c/z/pdf", "d/w/xml"]


def feed(memory, steps, t0=0):
    """Observe ``(key index, value, outcome)`` steps at t0, t0 + 1, ...; returns the next t."""
    t = t0
    for k, value, outcome in steps:
        memory.observe(Evidence(K[k], value, t, outcome))
        t += 1
    return t


def four_active(memory):
    """One active precedent per key (a fresh key's first success proposes and promotes it)."""
    t = feed(memory, [(k, f"v{k}", True) for k in range(4)])
    assert all(memory.retrieve(K[k])[0].state is ACTIVE for k in range(4))
    return t


def pid_of(memory, k, value):
    return next(i for i, r in enumerate(memory.precedents()) if r.key == K[k] and r.value == value
                and memory.states()[i] is ACTIVE)


def test_alarm_revokes_the_failing_precedents_and_puts_the_others_on_probation():
    memory = TEPARegime()
    t = four_active(memory)
    # cross-key window: S(a), F(b), F(c) -> success rate 1/3 < 0.34, failures of 2 keys: alarm
    t = feed(memory, [(0, "v0", True), (1, "v1", False)], t)
    assert memory.regime_alarms == ()
    t = feed(memory, [(2, "v2", False)], t)
    (alarm,) = memory.regime_alarms
    assert alarm.t == 6 and alarm.failing_keys == (K[1], K[2]) and alarm.revoked == (1, 2)
    assert alarm.on_probation == (0, 3) and memory.on_probation() == {0: 6, 3: 6}
    assert memory.retrieve(K[1]) == [] and memory.retrieve(K[2]) == []
    revocations = [e for e in memory.audit_log if e.to_state is REVOKED]
    assert [(e.precedent_id, e.t, e.reason) for e in revocations] == [
        (1, 6, f"failed in the regime alarm at t=6 (keys {K[1]}, {K[2]})"),
        (2, 6, f"failed in the regime alarm at t=6 (keys {K[1]}, {K[2]})")]

    # TEPA, on the same stream, keeps all four: one failure each is not enough for its own rules
    tepa = TEPA()
    feed(tepa, [(k, f"v{k}", True) for k in range(4)] + [(0, "v0", True), (1, "v1", False), (2, "v2", False)])
    assert all(tepa.retrieve(K[k]) for k in range(4)) and not tepa.archive

    # probation: d is still retrieved; its next failure revokes it at once; a's success confirms it
    assert memory.retrieve(K[3])[0].value == "v3"
    t = feed(memory, [(3, "v3", False)], t)
    assert memory.retrieve(K[3]) == []
    assert memory.audit_log[-1].reason == "failed on probation after the regime alarm at t=6"
    t = feed(memory, [(0, "v0", True)], t)
    assert memory.on_probation() == {}
    assert [(e.precedent_id, e.t, e.event, e.alarm_t) for e in memory.probation_log] == [
        (0, 6, "start", 6), (3, 6, "start", 6), (3, 7, "revoked", 6), (0, 8, "confirmed", 6)]
    assert [e.event for e in memory.explain_probation(K[3])] == ["start", "revoked"]

    # re-promotion: the revoked value works again and comes back as a new precedent
    feed(memory, [(1, "v1", True)], t)
    assert memory.retrieve(K[1])[0].value == "v1"
    events = memory.explain(K[1])
    assert [(e.precedent_id, e.from_state, e.to_state) for e in events] == [
        (1, None, LifecycleState.HYPOTHESIS), (1, LifecycleState.HYPOTHESIS, ACTIVE), (1, ACTIVE, REVOKED),
        (4, None, LifecycleState.HYPOTHESIS), (4, LifecycleState.HYPOTHESIS, ACTIVE)]
    assert [r.value for r in memory.archive] == ["v1", "v2", "v3"]
    assert replay_audit(memory.audit_log) == memory.states()


def test_no_alarm_until_the_window_is_full():
    memory = TEPARegime()
    t = four_active(memory)
    t = feed(memory, [(0, "v0", False), (1, "v1", False)], t)  # two uses: the window of 3 is not full
    assert memory.regime_alarms == ()
    feed(memory, [(2, "v2", False)], t)
    assert [a.failing_keys for a in memory.regime_alarms] == [(K[0], K[1], K[2])]


def test_one_keys_failures_never_raise_the_alarm():
    memory = TEPARegime()
    t = four_active(memory)
    t = feed(memory, [(0, "v0", True), (1, "v1", False), (1, "v1", False)], t)
    assert memory.regime_alarms == ()        # two failures, one key: TEPA's own rule revokes it
    assert memory.retrieve(K[1]) == [] and memory.audit_log[-1].reason.startswith("recent success")
    feed(memory, [(2, "v2", False)], t)       # window F(b), F(b), F(c): two keys now
    assert [a.failing_keys for a in memory.regime_alarms] == [(K[1], K[2])]


@pytest.mark.parametrize("kwargs, steps, fires", [
    ({}, [(0, False), (1, True), (2, False)], True),                        # rate 1/3 < 0.34
    ({"regime_rate": 0.3}, [(0, False), (1, True), (2, False)], False),     # 1/3 is not below 0.3
    ({"regime_keys": 3}, [(0, False), (1, False), (2, True)], False),       # two keys < 3
    ({"regime_keys": 3}, [(0, False), (1, False), (2, False)], True),
    ({"regime_window": 2}, [(3, True), (0, False), (1, False)], True),      # the last two uses
    ({"regime_window": 4}, [(3, True), (0, False), (1, False)], False),     # window of 4 not yet full
])
def test_each_threshold_takes_effect(kwargs, steps, fires):
    memory = TEPARegime(**kwargs)
    t = four_active(memory)
    feed(memory, [(k, f"v{k}", outcome) for k, outcome in steps], t)
    assert bool(memory.regime_alarms) == fires


def test_assertions_and_unproven_values_do_not_enter_the_window():
    memory = TEPARegime()
    t = four_active(memory)
    t = feed(memory, [(0, "v0", False), (1, "other", None), (2, "never-proposed", False)], t)
    assert memory.regime_alarms == ()  # only a's failure was a use of an active precedent
    feed(memory, [(3, "v3", False)], t)
    assert memory.regime_alarms == ()  # window: F(a), F(d): still not full


def test_revoke_failed_false_puts_the_failing_precedents_on_probation_too():
    memory = TEPARegime(revoke_failed=False)
    t = four_active(memory)
    feed(memory, [(0, "v0", True), (1, "v1", False), (2, "v2", False)], t)
    (alarm,) = memory.regime_alarms
    assert alarm.revoked == () and alarm.on_probation == (0, 1, 2, 3)
    assert all(memory.retrieve(K[k]) for k in range(4))


def test_with_one_key_the_rule_cannot_fire_and_the_memory_is_tepa():
    env = gym.make("TEPA/RegimeDrift-v0", phase_lengths=(20, 20, 20, 20))
    for seed in range(5):
        regime, tepa = MemoryAgent("tepa-regime"), MemoryAgent("tepa")
        a, b = run_episode(env, regime, seed=seed), run_episode(env, tepa, seed=seed)
        assert (a.success == b.success).all()
        assert regime.memory.regime_alarms == () and regime.memory.audit_log == tepa.memory.audit_log


def test_a_full_reversal_of_many_keys_raises_alarms():
    env = gym.make("TEPA/RegimeDrift-v0", n_keys=4)
    agent = MemoryAgent("tepa-regime")
    run_episode(env, agent, seed=0)
    memory = agent.memory
    assert memory.regime_alarms and any(a.t >= 80 for a in memory.regime_alarms)
    assert replay_audit(memory.audit_log) == memory.states()


@pytest.mark.parametrize("kwargs, error, field", [
    ({"regime_keys": 1}, ValueError, "regime_keys"),
    ({"regime_keys": 2.0}, TypeError, "regime_keys"),
    ({"regime_window": 0}, ValueError, "regime_window"),
    ({"regime_window": 2, "regime_keys": 3}, ValueError, "regime_keys"),
    ({"n_rec": 2, "regime_keys": 3}, ValueError, "regime_keys"),
    ({"regime_rate": 1.5}, ValueError, "regime_rate"),
    ({"regime_rate": "0.3"}, TypeError, "regime_rate"),
    ({"revoke_failed": 1}, TypeError, "revoke_failed"),
    ({"theta_rev": 2.0}, ValueError, "theta_rev"),
])
def test_bad_parameters_are_refused_naming_the_field(kwargs, error, field):
    with pytest.raises(error, match=field):
        make_memory("tepa-regime", **kwargs)


steps = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(["t0", "t1", "t2"]), st.sampled_from([True, False, None]),
              st.integers(0, 2)),
    min_size=1, max_size=80,
)


def stream(raw, n_keys=4):
    t, out = 0, []
    for k, value, outcome, gap in raw:
        t += gap
        out.append(Evidence(K[k % n_keys], value, t, outcome, "prop"))
    return out


@settings(max_examples=80, deadline=None)
@given(raw=steps)
def test_invariants_over_random_streams(raw):
    for memory in (TEPARegime(), TEPARegime(revoke_failed=False), TEPARegime(preset="paper")):
        for e in stream(raw):
            memory.observe(e)
            states = memory.states()
            for pid in memory.on_probation():
                assert states[pid] is ACTIVE  # probation only ever holds live, active precedents
            for key in K:
                assert all(r.state is ACTIVE and r.key == key for r in memory.retrieve(key))
        assert replay_audit(memory.audit_log) == memory.states()
        assert all(r.state is REVOKED for r in memory.archive)
        revoked_at = {(e.precedent_id, e.t) for e in memory.audit_log if e.to_state is REVOKED}
        started = set()
        for event in memory.probation_log:
            if event.event == "start":
                assert event.precedent_id not in started
                started.add(event.precedent_id)
            else:
                assert event.precedent_id in started
                started.discard(event.precedent_id)
                if event.event == "revoked":
                    assert (event.precedent_id, event.t) in revoked_at
        assert started == set(memory.on_probation())
        for alarm in memory.regime_alarms:
            assert len(alarm.failing_keys) >= memory.regime_keys


@settings(max_examples=60, deadline=None)
@given(raw=steps)
def test_single_key_streams_give_tepas_exact_state(raw):
    regime, tepa = TEPARegime(), TEPA()
    for e in stream(raw, n_keys=1):
        regime.observe(e)
        tepa.observe(e)
        assert regime.retrieve(K[0]) == tepa.retrieve(K[0])
    assert regime.audit_log == tepa.audit_log and regime.regime_alarms == ()


def test_hidden_probation_hides_the_precedents_until_their_next_use_decides_them():
    shown, hidden = TEPARegime(), TEPARegime(probation="hidden")
    for memory in (shown, hidden):
        t = four_active(memory)
        t = feed(memory, [(0, "v0", True), (1, "v1", False), (2, "v2", False)], t)
        assert memory.on_probation() == {0: 6, 3: 6}
    assert [r.value for r in shown.retrieve(K[3])] == ["v3"] and [r.value for r in shown.retrieve(K[0])] == ["v0"]
    assert hidden.retrieve(K[3]) == [] and hidden.retrieve(K[0]) == []
    assert hidden.states() == shown.states() and hidden.audit_log == shown.audit_log
    # the next use decides a hidden precedent as it does a shown one: a success confirms it (shown again) ...
    t = feed(hidden, [(0, "v0", True)], t)
    assert [r.value for r in hidden.retrieve(K[0])] == ["v0"] and hidden.on_probation() == {3: 6}
    # ... and a failure revokes it
    feed(hidden, [(3, "v3", False)], t)
    assert hidden.retrieve(K[3]) == [] and hidden.on_probation() == {}
    assert hidden.audit_log[-1].reason == "failed on probation after the regime alarm at t=6"
    assert replay_audit(hidden.audit_log) == hidden.states()


@pytest.mark.parametrize("bad, error", [(True, TypeError), (None, TypeError), ("off", ValueError)])
def test_a_bad_probation_mode_is_refused_naming_the_field(bad, error):
    with pytest.raises(error, match="probation"):
        make_memory("tepa-regime", probation=bad)
