"""A notified TEPA's audit log replays to its states under the lifecycle it declares."""

from __future__ import annotations

import pytest

from tepa_envs.agents import TEPA, replay_audit
from tepa_envs.agents.memories.tepa_rules import ACTIVE, DEMOTE_TRANSITIONS, HYPOTHESIS, REVOKED, TRANSITIONS
from tepa_envs.core import Evidence


def notified(on_notify: str) -> TEPA:
    memory = TEPA(on_notify=on_notify)
    for t in range(1, 8):
        memory.observe(Evidence("k", "a", t, True, "s"))
    assert ACTIVE in memory.states().values()
    memory.on_notify("k")
    return memory


def test_demote_logs_active_to_hypothesis_which_only_its_declared_lifecycle_allows():
    memory = notified("demote")
    assert set(memory.states().values()) == {HYPOTHESIS}
    assert memory.transitions is DEMOTE_TRANSITIONS and HYPOTHESIS in DEMOTE_TRANSITIONS[ACTIVE]
    with pytest.raises(ValueError, match="illegal transition"):
        replay_audit(memory.audit_log)  # not a transition of the paper's lifecycle
    assert replay_audit(memory.audit_log, transitions=memory.transitions) == memory.states()


@pytest.mark.parametrize("on_notify", ["ignore", "revoke"])
def test_every_other_option_keeps_the_papers_lifecycle(on_notify):
    memory = notified(on_notify)
    assert memory.transitions is TRANSITIONS and HYPOTHESIS not in TRANSITIONS[ACTIVE]
    assert replay_audit(memory.audit_log) == memory.states()
    assert (REVOKED in memory.states().values()) == (on_notify == "revoke")
