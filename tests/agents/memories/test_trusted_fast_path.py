"""The speed kernel is bound to the rules: evidence validated once where it is built, TEPA's
inlined paths (:mod:`~tepa_envs.agents.memories.tepa_kernel`) and audit reasons stored as codes
give exactly the results of the paper's rules (:class:`~tepa_envs.agents.memories.tepa_rules.TEPARules`),
and of the rules' path with every reason a text."""

from __future__ import annotations

import copy
import pickle
import random

import pytest

from tepa_envs.agents import TEPA, TEPAFull
from tepa_envs.agents.memories import tepa_audit
from tepa_envs.agents.memories.registry import METHOD_NAMES, make_memory
from tepa_envs.agents.memories.tepa import AuditLog
from tepa_envs.agents.memories.tepa_choices import CHOICE_VALUES, TEPAChoices
from tepa_envs.agents.memories.tepa_rules import HYPOTHESIS, LIFECYCLE, TEPARules
from tepa_envs.core import Evidence
from tepa_envs.core.types import is_checked


class GeneralPath(TEPA):
    """TEPA through its general path: overriding a lifecycle method turns the inlined paths off,
    and overriding _promote/_revoke makes every reason a text formatted when it is logged."""

    def _observe(self, evidence):
        super()._observe(evidence)

    def _promote(self, precedent, t, reason):
        assert isinstance(reason, str)
        super()._promote(precedent, t, reason)

    def _revoke(self, live, precedent, t, reason):
        assert isinstance(reason, str)
        super()._revoke(live, precedent, t, reason)


def stream(seed: int, n: int = 500):
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(rng.choice([1, 3, 40]))]
    values = ["a", "b", "c", "d"][: rng.choice([2, 4])]
    t = 0
    for _ in range(n):
        t += rng.choice([0, 1, 1, 3])
        yield Evidence(rng.choice(keys), rng.choice(values), t, rng.choice([True, True, False, None]), "s")


def state(memory: TEPA, keys):
    return (memory.audit_log, memory.archive, memory.precedents(), memory.states(),
            {k: memory.retrieve(k, "ctx") for k in keys}, {k: memory.explain(k) for k in keys})


CONFIGS = [{}, {"preset": "paper"}, {"theta_pro": 0.7}, {"n_min": 2, "theta_rev": 0.45, "n_rec": 4},
           {"alpha": 0.5, "beta": 2.0}, {"revocation": False}, {"theta_prop_fresh": 2}]
CONFIGS += [{name: value} for name, allowed in CHOICE_VALUES.items() for value in allowed]
CONFIGS += [{"assertion_supersedes": False}, {"assertions_in_window": True}]
# Paths the kernel meets only under these: a hypothesis that is a key's only live value (demoted by a
# notification, or proposed below theta_pro), a key emptied by a notification, a paper-preset fresh key
# proposed on its first support but checked for revocation at proposal (and revoked there when n_min = 1).
CONFIGS += [{"on_notify": "demote"}, {"on_notify": "revoke"}, {"on_notify": "demote", "theta_pro": 0.7},
            {"preset": "paper", "theta_prop_fresh": 1}, {"top_k": 1, "tie_break": "last_created"},
            {"preset": "paper", "theta_prop_fresh": 1, "n_min": 1, "beta": 4.0, "theta_rev": 0.45}]


def run_both(kwargs, seed, reference_class):
    fast, reference = TEPA(**kwargs), reference_class(**kwargs)
    keys = set()
    for i, evidence in enumerate(stream(seed)):
        fast.observe(evidence)
        reference.observe(evidence)
        keys.add(evidence.key)
        assert fast.retrieve(evidence.key) == reference.retrieve(evidence.key)
        if kwargs.get("on_notify") and i % 23 == 7:
            fast.on_notify(evidence.key)
            reference.on_notify(evidence.key)
    assert state(fast, sorted(keys)) == state(reference, sorted(keys))
    return fast, reference


@pytest.mark.parametrize("kwargs", CONFIGS)
@pytest.mark.parametrize("seed", range(4))
def test_the_kernel_equals_the_rules(kwargs, seed):
    fast, rules = run_both(kwargs, seed, TEPARules)
    assert fast._inline and fast._inline_retrieve and rules._codes


@pytest.mark.parametrize("kwargs", CONFIGS)
@pytest.mark.parametrize("seed", range(2))
def test_the_kernel_equals_the_rules_with_reasons_as_texts(kwargs, seed):
    _, general = run_both(kwargs, seed, GeneralPath)
    assert not general._inline and not general._codes


def test_the_kernel_follows_parameters_and_choices_changed_mid_stream():
    """The kernel's derived constants (is a fresh key proposed, and promoted, at once?) follow
    every change; reset() keeps the changed settings."""
    changes = {150: {"theta_pro": 0.7}, 300: {"choices": TEPAChoices.from_preset("paper", theta_prop_fresh=1)},
               450: {"alpha": 3.0, "theta_pro": 0.6}, 600: {"revocation": False},
               750: {"theta_prop_fresh": 2, "revocation": True}, 900: {"reset": None}}
    fast, rules = TEPA(), TEPARules()
    seen = set()
    for i, evidence in enumerate(stream(11, 1050)):
        for name, value in changes.get(i, {}).items():
            for memory in (fast, rules):
                if name == "reset":
                    memory.reset()
                else:
                    setattr(memory, name, value)
        seen.add(fast._fresh_proposes)
        fast.observe(evidence)
        rules.observe(evidence)
        assert fast.retrieve(evidence.key) == rules.retrieve(evidence.key)
    assert state(fast, sorted(fast._live)) == state(rules, sorted(fast._live))
    assert seen == {True, False} and fast.params == rules.params and fast.choices == rules.choices


def _overriding(name):
    rule = getattr(TEPARules, name)

    def override(self, *args):
        return rule(self, *args)

    return type("Sub", (TEPA,), {name: override})


@pytest.mark.parametrize("name", LIFECYCLE)
def test_every_rule_method_override_turns_the_kernel_off(name):
    memory = _overriding(name)()
    assert memory._inline is False and memory._inline_retrieve is True
    assert memory._codes is (name not in ("_promote", "_revoke", "validity"))
    for evidence in stream(3, 200):  # and the rules' path still gives the kernel's results
        memory.observe(evidence)
    reference = TEPA()
    for evidence in stream(3, 200):
        reference.observe(evidence)
    assert memory.audit_log == reference.audit_log
    assert _overriding("_retrieve")()._inline_retrieve is False


def test_reasons_quote_the_thresholds_in_force_when_logged():
    """A threshold changed mid-stream: earlier reasons keep the old value, as texts formatted at once do."""
    fast, general = TEPA(), GeneralPath()
    for i, evidence in enumerate(stream(7, 600)):
        if i == 200:
            for memory in (fast, general):
                memory.theta_rev, memory.theta_pro, memory.alpha = 0.45, 0.7, 2.0
        if i == 400:
            for memory in (fast, general):
                memory.theta_rec = 0.5
        fast.observe(evidence)
        general.observe(evidence)
    assert fast.audit_log == general.audit_log
    reasons = {event.reason for event in fast.audit_log}
    assert any("theta_rev 0.3 " in r for r in reasons) and any("theta_rev 0.45 " in r for r in reasons)


def test_counts_beyond_a_code_are_stored_as_text(monkeypatch):
    def feed(memory):
        for t in range(8):
            memory.observe(Evidence("k", "a", t, None))
        for t in range(8, 30):
            memory.observe(Evidence("k", "a", t, False))
        return memory.audit_log

    kwargs = {"n_rec": 60, "theta_rev": 0.5}  # revoked by the posterior rule, at s = 8, f = 9
    reference = feed(GeneralPath(**kwargs))
    monkeypatch.setattr(tepa_audit, "ARG_LIMIT", 4)  # codes then hold counts below 4 only
    memory = TEPA(**kwargs)
    logged = feed(memory)
    assert memory._audit.texts  # the revocation's reason was stored as text
    monkeypatch.undo()
    assert logged == reference == memory.audit_log
    assert reference[-1].reason == "posterior 0.474 < theta_rev 0.5 after 17 observations"


def test_a_subclass_keeps_the_protected_methods_and_text_reasons():
    class CrossKey(TEPA):
        seen = []

        def _revoke(self, live, precedent, t, reason):
            self.seen.append(reason)
            super()._revoke(live, precedent, t, reason)

        def _consider_promotion(self, live, precedent, t):
            if precedent.support >= 2:
                self._promote(precedent, t, "custom promotion")

    memory = CrossKey()
    for t, (value, outcome) in enumerate([("a", True), ("a", True), ("a", False), ("a", False), ("a", False),
                                          ("a", False), ("a", False)]):
        memory.observe(Evidence("k", value, t, outcome))
    assert [e.reason for e in memory.audit_log][:2] == ["proposed after 1 supports", "custom promotion"]
    assert memory.seen and all(isinstance(r, str) for r in memory.seen)
    assert memory.audit_log[-1].reason == memory.seen[-1]


def test_audit_log_buffers_and_reads_across_blocks():
    memory = TEPA()
    n = tepa_audit.BLOCK  # more events than one buffered block
    for i in range(n):
        memory.observe(Evidence(f"k{i}", "a", i, True))
    assert len(memory.audit_log) == 2 * n == len(memory._audit)
    assert memory.audit_log[-1].key == f"k{n - 1}" and memory.audit_log[0].reason == "proposed after 1 supports"
    log = AuditLog()
    log.append(0, None, HYPOTHESIS, 3, "a reason")
    assert log.format(log.tail[2] & ~15) == "a reason"


# ----------------------------------------------------------------------- trusted evidence
def forged(cls=Evidence, **fields):
    evidence = object.__new__(cls)
    for name, value in {"key": "k", "value": "a", "t": 5, "outcome": True, "source": "s", **fields}.items():
        object.__setattr__(evidence, name, value)
    return evidence


def test_constructed_evidence_is_checked_and_nothing_else_is():
    class Sub(Evidence):
        pass

    evidence = Evidence("k", "a", 1, True)
    assert is_checked(evidence)
    assert not is_checked(forged())
    assert not is_checked(Sub("k", "a", 1, True))  # a subclass is validated in full by memories
    assert not is_checked(pickle.loads(pickle.dumps(evidence)))  # unpickled: validated in full
    assert not is_checked(copy.deepcopy(evidence))
    assert not is_checked(("k", "a", 1, True))
    assert pickle.loads(pickle.dumps(evidence)) == evidence and hash(copy.copy(evidence)) == hash(evidence)


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_unchecked_evidence_is_validated_in_full_before_any_change(name):
    memory = make_memory(name)
    memory.observe(Evidence("k", "a", 1, True))
    before = memory.retrieve("k"), getattr(memory, "audit_log", None)
    for bad, error in [(forged(key=""), ValueError), (forged(t=-1), ValueError), (forged(value=3), TypeError),
                       (forged(outcome=1), TypeError), (forged(t=0), ValueError)]:
        with pytest.raises(error):
            memory.observe(bad)

    class Impostor:  # not an Evidence, though it claims to be checked
        key, value, t, outcome, source, _checked = "k", "a", 9, True, "s", True

    with pytest.raises(TypeError):
        memory.observe(Impostor())
    with pytest.raises(ValueError, match="backwards"):
        memory.observe(Evidence("k", "a", 0, True))
    assert (memory.retrieve("k"), getattr(memory, "audit_log", None)) == before
    memory.observe(forged(t=6))  # a well-formed unchecked evidence is accepted after validation
    memory.observe(Evidence("k", "a", 7, True))


def test_tepa_full_and_subclasses_take_the_general_path():
    assert not TEPAFull()._inline and TEPA()._inline
