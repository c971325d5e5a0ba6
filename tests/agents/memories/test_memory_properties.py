"""Property-based invariants over random evidence streams, for every shipped method."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tepa_envs.agents import METHOD_NAMES, TEPA, TEPAFull, TEPANoRev, make_memory, replay_audit
from tepa_envs.core import Evidence, LifecycleState

KEYS = ["a/x/csv", "b/y/json", "c/z/pdf"]
VALUES = ["tool_0", "tool_1", "tool_2"]

steps = st.lists(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES), st.sampled_from([True, False, None]),
              st.integers(min_value=0, max_value=2)),
    min_size=1, max_size=60,
)


def stream(raw):
    t = 0
    out = []
    for key, value, outcome, gap in raw:
        t += gap
        out.append(Evidence(key, value, t, outcome, "prop"))
    return out


def view(memory):
    return [[(r.key, r.value, r.support, r.conflict, r.state) for r in memory.retrieve(k, k)] for k in KEYS]


@settings(max_examples=40, deadline=None)
@given(raw=steps)
def test_same_stream_gives_same_state_for_every_method(raw):
    evidence = stream(raw)
    for name in METHOD_NAMES:
        first, second = make_memory(name), make_memory(name)
        for e in evidence:
            first.observe(e)
            second.observe(e)
        assert view(first) == view(second), name


def tepa_variants():
    full = TEPAFull()
    full.trial = lambda kind, key, value: value == "tool_1"
    return [TEPA(), TEPANoRev(), full]


@settings(max_examples=60, deadline=None)
@given(raw=steps)
def test_tepa_invariants(raw):
    for memory in tepa_variants():
        counts: dict[int, tuple[int, int]] = {}
        for e in stream(raw):
            memory.observe(e)
            records = memory.precedents()
            states = memory.states()
            assert len(records) == len(states) == len(memory)  # each precedent in exactly one state
            for key in KEYS:
                for record in memory.retrieve(key):
                    assert record.state is LifecycleState.ACTIVE
                    assert record.key == key
            for pid, record in zip(sorted(states), records):
                previous = counts.get(pid, (0, 0))
                assert record.support >= previous[0] and record.conflict >= previous[1]
                counts[pid] = (record.support, record.conflict)
            assert all(r.state is LifecycleState.REVOKED for r in memory.archive)
            assert len(memory.archive) == sum(s is LifecycleState.REVOKED for s in states.values())
            for key in KEYS:
                active = [r for r in memory.precedents(key) if r.state is LifecycleState.ACTIVE]
                assert len(memory.retrieve(key)) == min(len(active), memory.top_k)
        assert replay_audit(memory.audit_log) == memory.states()
        if isinstance(memory, TEPANoRev):
            assert not memory.archive


@settings(max_examples=40, deadline=None)
@given(raw=steps, cut=st.integers(min_value=0, max_value=59))
def test_reset_forgets_everything(raw, cut):
    for name in METHOD_NAMES:
        memory = make_memory(name)
        for e in stream(raw)[:cut]:
            memory.observe(e)
        memory.reset()
        assert all(memory.retrieve(k, k) == [] for k in KEYS), name
