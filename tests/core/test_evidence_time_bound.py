"""Evidence times are bounded (``0 <= t < 2**63``): an out-of-range time is refused
before any memory changes, for every shipped method."""

import pytest

from tepa_envs.agents.memories.protocol import hooks_of
from tepa_envs.agents.memories.registry import METHOD_NAMES, make_memory
from tepa_envs.core.types import MAX_T, Evidence, validate_evidence

KEYS = ("k", "other")


def unchecked_evidence(key, value, t, outcome, source="env"):
    """An Evidence that skipped its constructor's validation (as a caller bypassing it could build)."""
    evidence = object.__new__(Evidence)
    for name, field_value in zip(("key", "value", "t", "outcome", "source"), (key, value, t, outcome, source)):
        object.__setattr__(evidence, name, field_value)
    return evidence


def snapshot(memory):
    retrieved = {key: memory.retrieve(key) for key in KEYS}
    audit = tuple(memory.audit_log) if hasattr(memory, "audit_log") else None
    return retrieved, audit


def fed(name):
    memory = make_memory(name)
    hooks_of(memory).bind_trial(lambda kind, key, value: value == "a")
    stream = [Evidence("k", "a", 0, None), Evidence("k", "a", 1, True), Evidence("k", "a", 2, True),
              Evidence("other", "x", 3, True), Evidence("k", "b", 4, False), Evidence("k", "a", 5, True),
              Evidence("k", "a", 6, True), Evidence("k", "a", 7, True)]
    for evidence in stream:
        memory.observe(evidence)
    return memory


@pytest.mark.parametrize("t", [2**63, 2**64, 10**30, -1])
def test_evidence_time_out_of_range_names_the_field(t):
    with pytest.raises(ValueError, match=r"evidence\.t"):
        Evidence("k", "b", t, None)
    with pytest.raises(ValueError, match=r"evidence\.t"):
        validate_evidence(unchecked_evidence("k", "b", t, None))


def test_largest_time_is_accepted():
    assert MAX_T == 2**63
    assert Evidence("k", "b", 2**63 - 1, None).t == 2**63 - 1


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_a_refused_time_leaves_retrieval_and_audit_unchanged(name):
    memory = fed(name)
    before = snapshot(memory)
    with pytest.raises(ValueError, match=r"evidence\.t"):
        memory.observe(Evidence("k", "b", 2**63, None))
    for t in (2**63, 2**64):
        for outcome in (None, True, False):
            with pytest.raises(ValueError, match=r"evidence\.t"):
                memory.observe(unchecked_evidence("k", "b", t, outcome))
            assert snapshot(memory) == before
    # the memory is still usable, up to the largest valid time
    memory.observe(Evidence("k", "a", 8, True))
    memory.observe(Evidence("k", "a", 2**63 - 1, True))
    assert memory.retrieve("k") is not None


def test_the_issue_example_keeps_tepa_retrieval():
    memory = make_memory("tepa")
    memory.observe(Evidence("k", "a", 0, None))
    before = snapshot(memory)
    with pytest.raises(ValueError, match=r"evidence\.t"):
        memory.observe(Evidence("k", "b", 2**63, None))
    assert snapshot(memory) == before
