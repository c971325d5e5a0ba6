"""``lww``, ``temporal-recency`` and ``conflict-aware-recency`` show the same first value
on every retrieval, so under a reader that follows one value and several values alike
they make the same decisions on every stream of every suite scenario (issue 31, item 4);
a reader that follows a list more readily than a lone value separates them."""

import numpy as np
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation import evaluate
from tepa_envs.agents.evaluation.studies.suite import SUITE_SCENARIOS
from tepa_envs.agents.readers.profile import load_profile

TRIO = ["lww", "temporal-recency", "conflict-aware-recency"]


@pytest.mark.parametrize("env_id", SUITE_SCENARIOS)
def test_the_three_recency_memories_decide_alike_on_every_suite_scenario(env_id):
    for profile in ("default", "never-explore"):
        evaluation = evaluate(env_id, TRIO, range(4), reader_kwargs=load_profile(profile).reader_kwargs(),
                              metrics=True)
        runs = [evaluation.runs[m] for m in TRIO]
        for run in runs[1:]:
            assert np.array_equal(run.success, runs[0].success), (env_id, profile, run.method)
            # the same first value shown (the lists after it differ: a "buried" view of one is "wrong" for LWW)
            first = [[m["views"]["phases"]["overall"][f"{kind}_share"] for kind in ("correct", "stale", "empty")]
                     for m in run.metrics]
            assert first == [[m["views"]["phases"]["overall"][f"{kind}_share"] for kind in ("correct", "stale", "empty")]
                             for m in runs[0].metrics], (env_id, profile, run.method)


def test_a_reader_that_follows_lists_more_readily_separates_lww():
    kwargs = load_profile("smollm2-135m").reader_kwargs()
    assert kwargs["follow_conflict"] != kwargs["follow_prob"]
    evaluation = evaluate("TEPA/RegimeDrift-v0", TRIO, range(20), reader_kwargs=kwargs, metrics=False)
    lww, recency, conflict_aware = (evaluation.runs[m].success for m in TRIO)
    assert not np.array_equal(lww, recency) and not np.array_equal(lww, conflict_aware)
    assert lww.mean() < min(recency.mean(), conflict_aware.mean())
