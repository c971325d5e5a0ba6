"""Baseline behaviour, the loader, and bad input leaving every memory unchanged."""

import copy

import pytest

from tepa_envs.agents import (
    METHOD_NAMES, AppendOnly, LastWriteWins, LWWValidation, OracleReset, ReactiveForgetting,
    SemanticRetrieval, SlidingWindow, TemporalRecency, make_memory,
)
from tepa_envs.agents.memories import OracleView
from tepa_envs.core import Evidence

KEY = "summarize/finance/csv"


def ev(value, t, outcome=True, key=KEY):
    return Evidence(key, value, t, outcome, "test")


def test_lww_keeps_one_value_per_key_the_newest_assertion():
    memory = LastWriteWins()
    for t, value in enumerate(["a", "a", "b", "c", "c"]):
        memory.observe(ev(value, t))
    memory.observe(ev("z", 5, outcome=False))  # failures assert nothing
    (record,) = memory.retrieve(KEY)
    assert (record.value, record.support, record.conflict) == ("c", 2, 2)


def test_append_only_keeps_every_value_ranked_by_support():
    memory = AppendOnly()
    for t, value in enumerate(["a", "a", "a", "b", "c", "c"]):
        memory.observe(ev(value, t))
    assert [(r.value, r.support) for r in memory.retrieve(KEY)] == [("a", 3), ("c", 2), ("b", 1)]


def test_temporal_recency_ranks_by_last_seen_and_cuts():
    memory = TemporalRecency(top_k=2)
    for t, value in enumerate(["a", "a", "a", "b", "c"]):
        memory.observe(ev(value, t))
    assert [r.value for r in memory.retrieve(KEY)] == ["c", "b"]


def test_sliding_window_forgets_beyond_its_window():
    memory = SlidingWindow(window=3)
    for t, value in enumerate(["a", "a", "b", "b", "b"]):
        memory.observe(ev(value, t))
    assert [(r.value, r.support) for r in memory.retrieve(KEY)] == [("b", 3)]


def test_reactive_forgetting_wipes_everything_after_a_run_of_failures():
    memory = ReactiveForgetting(patience=3)
    memory.observe(ev("a", 0))
    memory.observe(ev("x", 1, key="other/key/y"))
    memory.observe(ev("a", 2, outcome=False))
    memory.observe(ev("a", 3, outcome=False))
    memory.observe(ev("a", 4, outcome=True))  # success breaks the run
    memory.observe(ev("a", 5, outcome=False))
    memory.observe(ev("a", 6, outcome=False))
    assert memory.retrieve(KEY) and memory.cleanups == 0
    memory.observe(ev("a", 7, outcome=False))
    assert memory.retrieve(KEY) == [] and memory.retrieve("other/key/y") == []
    assert memory.cleanups == 1


def test_oracle_reset_global_clears_at_the_boundary_only():
    memory = OracleReset(scope="global")
    memory.observe(ev("a", 0))
    assert memory.retrieve(KEY)
    memory.on_oracle(KEY, "b")  # the global reading ignores per-key truths
    assert memory.retrieve(KEY)
    memory.on_phase_boundary()
    assert memory.retrieve(KEY) == [] and memory.boundaries_seen == 1
    memory.observe(ev("b", 1))
    assert [r.value for r in memory.retrieve(KEY)] == ["b"]


def test_oracle_reset_clears_only_the_key_whose_truth_changed():
    memory = OracleReset()
    other = "other/key/y"
    memory.on_oracle(KEY, "a")
    memory.observe(ev("a", 0))
    memory.on_oracle(other, "x")
    memory.observe(Evidence(other, "x", 1, True, "test"))
    memory.on_phase_boundary()  # a global boundary clears nothing per key
    memory.on_oracle(KEY, "a")
    assert [r.value for r in memory.retrieve(KEY)] == ["a"]
    memory.on_oracle(KEY, "b")  # KEY changed: only KEY is forgotten
    assert memory.retrieve(KEY) == [] and [r.value for r in memory.retrieve(other)] == ["x"]
    assert memory.keys_cleared == 1
    memory.observe(ev("b", 2))
    memory.on_oracle(KEY, "b")  # told again: nothing changes
    assert [r.value for r in memory.retrieve(KEY)] == ["b"]
    with pytest.raises(ValueError, match="scope"):
        OracleReset(scope="phase")


def test_oracle_view_shows_the_told_truth_only():
    memory = OracleView()
    assert memory.retrieve(KEY) == []
    memory.observe(ev("a", 0))
    assert memory.retrieve(KEY) == []  # evidence is not a truth
    memory.on_oracle(KEY, "b")
    assert [(r.value, r.state.value) for r in memory.retrieve(KEY)] == [("b", "active"), ("a", "revoked")]
    memory.reset()
    assert memory.retrieve(KEY) == []
    alone = OracleView(alternatives=False)
    alone.observe(ev("a", 0))
    alone.on_oracle(KEY, "b")
    assert [(r.value, r.conflict) for r in alone.retrieve(KEY)] == [("b", 0)]


def test_semantic_retrieval_finds_similar_text_under_another_key():
    memory = SemanticRetrieval(top_k=1)
    memory.retrieve("pref/tone@work", "Write the weekly status update for my team at work")
    memory.observe(Evidence("pref/tone@work", "formal", 0, True, "test"))
    memory.retrieve("pref/food@home", "Suggest a dinner recipe for tonight at home")
    memory.observe(Evidence("pref/food@home", "thai", 1, True, "test"))
    (record,) = memory.retrieve("pref/tone@travel", "Write the weekly status update for my team while travelling")
    assert (record.key, record.value) == ("pref/tone@work", "formal")


def test_lww_validation_replaces_only_after_trials_pass():
    world = {KEY: "a"}
    memory = LWWValidation()
    memory.trial = lambda kind, key, value: world.get(key) == value
    memory.observe(ev("a", 0))
    memory.observe(ev("b", 1))  # b does not work: refused
    assert [r.value for r in memory.retrieve(KEY)] == ["a"]
    world[KEY] = "b"
    memory.observe(ev("b", 2))
    assert [r.value for r in memory.retrieve(KEY)] == ["b"]
    assert memory.trial_budget_spent == 4


def test_make_memory_by_name_path_and_object():
    assert make_memory("lww").name == "lww"
    assert make_memory("sliding-window", window=4).window == 4
    assert make_memory("tepa_envs.agents.memories.tepa:TEPA").name == "tepa"
    memory = AppendOnly()
    assert make_memory(memory) is memory


def test_make_memory_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as info:
        make_memory("tepa-rev-2")
    for name in METHOD_NAMES:
        assert name in str(info.value)


@pytest.mark.parametrize("spec, error", [
    ("nonexistent_pkg.mod:Thing", ValueError), ("tepa_envs.agents.memories.tepa:Nope", ValueError),
    ("tepa_envs.agents.memories.tepa:", ValueError), ("tepa_envs.core:PHASE_NAMES", ValueError),
])
def test_make_memory_bad_import_paths(spec, error):
    with pytest.raises(error):
        make_memory(spec)


def test_make_memory_bad_kwargs_name_the_method():
    with pytest.raises(TypeError, match="lww"):
        make_memory("lww", window=3)
    with pytest.raises(ValueError):
        make_memory("sliding-window", window=0)
    with pytest.raises(TypeError, match="not a memory"):
        make_memory(object())


BAD_EVIDENCE = [
    (lambda: Evidence("", "a", 0, True), ValueError, "key"),
    (lambda: Evidence("   ", "a", 0, True), ValueError, "key"),
    (lambda: Evidence(3, "a", 0, True), TypeError, "key"),
    (lambda: Evidence(KEY, 7, 0, True), TypeError, "value"),
    (lambda: Evidence(KEY, "a", 0, 1), TypeError, "outcome"),
    (lambda: Evidence(KEY, "a", 0, "yes"), TypeError, "outcome"),
    (lambda: Evidence(KEY, "a", -1, True), ValueError, "t"),
    (lambda: Evidence(KEY, "a", 1.5, True), TypeError, "t"),
    (lambda: Evidence(KEY, "a", True, True), TypeError, "t"),
]


@pytest.mark.parametrize("build, error, field", BAD_EVIDENCE)
def test_malformed_evidence_is_refused_with_the_field_named(build, error, field):
    with pytest.raises(error, match=rf"evidence\.{field}"):
        build()


def snapshot(memory):
    keys = [KEY, "other/key/y"]
    return [[(r.value, r.support, r.conflict, r.state) for r in memory.retrieve(k, "ctx")] for k in keys], \
        copy.deepcopy(getattr(memory, "audit_log", None))


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_bad_input_leaves_every_memory_unchanged(name):
    memory = make_memory(name)
    for t, (value, outcome) in enumerate([("a", True), ("a", True), ("b", False), ("a", None)]):
        memory.observe(ev(value, t + 10, outcome))
    before = snapshot(memory)
    with pytest.raises(ValueError, match="backwards"):
        memory.observe(ev("b", 3))
    with pytest.raises(TypeError):
        memory.observe(("key", "value", 20, True))
    with pytest.raises(TypeError):
        memory.retrieve(None)
    bad = object.__new__(Evidence)
    for field, value in [("key", ""), ("value", "x"), ("t", 99), ("outcome", 2), ("source", "s")]:
        object.__setattr__(bad, field, value)
    with pytest.raises(ValueError):
        memory.observe(bad)
    assert snapshot(memory) == before
    memory.observe(ev("a", 14))  # still accepts good evidence afterwards


def test_oracle_reset_is_told_each_true_boundary_during_an_episode():
    import gymnasium as gym

    import tepa_envs  # noqa: F401
    from tepa_envs.agents import MemoryAgent, run_episode

    agent = MemoryAgent("oracle-reset")
    env = gym.make("TEPA/RegimeDrift-v0", phase_lengths=(3, 4, 5, 6))
    seen = []
    original = agent.memory.on_phase_boundary

    def spy():
        seen.append(env.unwrapped.t)
        original()

    agent.memory.on_phase_boundary = spy
    run_episode(env, agent, seed=0)
    assert seen == [3, 7, 12]


def test_oracle_methods_are_told_every_presented_truth_before_they_are_asked():
    import gymnasium as gym

    import tepa_envs  # noqa: F401
    from tepa_envs.agents import MemoryAgent, run_episode
    from tepa_envs.agents.readers.agent import EpisodeObserver

    class Check(EpisodeObserver):
        def __init__(self):
            self.views = []

        def on_step(self, info_before, action, info_after):
            self.views.append((info_before["oracle"]["correct"], self.shown))

        def on_retrieve(self, key, context, records):
            self.shown = records[0].value if records else None

    env = gym.make("TEPA/RegimeDrift-Poisson-v0")
    check = Check()
    result = run_episode(env, MemoryAgent("oracle-view"), seed=3, observers=[check])
    assert check.views and all(correct == shown for correct, shown in check.views)
    assert result.success.mean() > 0.9
    agent = MemoryAgent("oracle-reset")
    run_episode(env, agent, seed=3)
    assert agent.memory.keys_cleared > 0 and agent.memory.boundaries_seen == 3
