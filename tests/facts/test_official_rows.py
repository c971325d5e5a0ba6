"""Every method on the two official MemoryAgentBench 6k rows, against issue 13's targets.

Skipped, saying why, when the rows are not there (e.g. in an sdist): see conftest.py.
Measured (seed 0): SH-6k TEPA 1.00, MH-6k TEPA 0.85 (paper 0.04); NoRev 0.26 on SH,
the share of questions about facts never overridden.
"""

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents import METHOD_NAMES
from tepa_envs.agents.evaluation.engine.jobs import method_label
from tepa_envs.agents.evaluation.outputs.facts_tables import BREAKDOWN, facts_markdown
from tepa_envs.agents.evaluation.studies.facts import diagnose, extra_rows, reproduce_facts, run_questions
from tepa_envs.facts.loader import load_records

ENV_ID = "TEPA/FactConsolidation-v0"
# Methods that cannot answer here by design: nothing is remembered, memory is cleared at
# the first question (oracle reset), or a value needs three supports (the paper's rules)
# where every fact is stated once.
CANNOT_ANSWER = {"no-memory", "oracle-reset", "tepa-paper"}


@pytest.fixture(scope="module")
def official(real_rows):
    scores, runs, envs = {}, {}, {}
    for split in ("sh", "mh"):
        env = envs[split] = gym.make(ENV_ID, split=split, length="6k",
                                     data_path=real_rows / f"factconsolidation_{split}_6k.json")
        for method in [*METHOD_NAMES, *extra_rows()]:
            rows = run_questions(env, method, 0)
            runs[split, method_label(method)] = rows
            scores[split, method_label(method)] = sum(r["success"] for r in rows) / len(rows)
    return scores, runs, envs, real_rows


def test_every_fact_sentence_is_keyed(official):
    _, _, envs, _ = official
    for env in envs.values():
        assert env.unwrapped.coverage() == 1.0


def test_single_hop_targets(official):
    scores, _, _, real_rows = official
    tepa = scores["sh", "tepa"]
    assert tepa >= 0.85  # measured 1.00 (paper 0.89)
    shared = [m for m in METHOD_NAMES if m != "tepa"]
    assert all(tepa >= scores["sh", m] for m in shared)  # every baseline sharing TEPA's front-end
    # NoRev keeps the first value of a key: it answers exactly the questions about facts
    # never overridden (26 of 100 on this row)
    (record,) = load_records(real_rows / "factconsolidation_sh_6k.json")
    assert abs(scores["sh", "tepa-norev"] - _never_overridden_share(official)) <= 0.05
    # the paper's lexical front-end, its own row: at most TEPA's (0.99 both under the
    # evaluation's `newest` reader; it falls far behind on multi-hop, below)
    assert scores["sh", "append-only-bm25"] <= tepa
    assert all(scores["sh", m] == 0.0 for m in CANNOT_ANSWER)
    assert len(record["questions"]) == 100


def test_multi_hop_targets_and_where_chains_break(official):
    scores, runs, envs, _ = official
    assert scores["mh", "tepa"] >= 0.40  # measured 0.85; paper 0.04, no MemoryAgentBench system above 0.07
    assert all(scores["mh", "tepa"] >= scores["mh", m] for m in METHOD_NAMES)
    assert scores["mh", "append-only-bm25"] <= scores["mh", "tepa"] - 0.5  # measured 0.08 against 0.77
    breakdown = diagnose(envs["mh"], runs["mh", "tepa"])["counts"]
    assert set(breakdown) == set(BREAKDOWN) and sum(breakdown.values()) == 100
    assert breakdown["correct"] == round(100 * scores["mh", "tepa"])
    assert breakdown["stale hop value (memory)"] == 0  # TEPA shows the newest fact at every hop
    norev = diagnose(envs["mh"], runs["mh", "tepa-norev"])["counts"]
    assert norev["stale hop value (memory)"] >= 50  # without revocation the chain follows overridden facts


def test_every_answer_carries_its_provenance(official):
    _, runs, envs, _ = official
    for row in runs["mh", "tepa"]:
        assert row["id"].startswith("factconsolidation_mh_6k_no")
        if row["success"]:
            assert row["hops"] and row["answer"] == row["hops"][-1][1]
            keyed = {e.key for e in envs["mh"].unwrapped.data.evidence if e is not None}
            assert all(key in keyed and isinstance(t, int) for key, _, t in row["hops"])


def _never_overridden_share(official) -> float:
    _, runs, envs, _ = official
    counts: dict[str, int] = {}
    for evidence in envs["sh"].unwrapped.data.evidence:
        if evidence is not None:
            counts[evidence.key] = counts.get(evidence.key, 0) + 1
    rows = runs["sh", "tepa"]  # TEPA answers every SH question; its first hop is the question's key
    rows = [row for row in rows if row["hops"]]
    return sum(counts[row["hops"][0][0]] == 1 for row in rows) / len(rows)


def test_reproduction_puts_real_and_synthetic_side_by_side(real_rows):
    rows = reproduce_facts(methods=("tepa",), lengths=("6k",), splits=("mh",), data_dir=real_rows,
                           with_extra_rows=False)
    by_source = {row["source"]: row for row in rows}
    assert set(by_source) == {"synthetic", "real"} and by_source["real"]["data"] == "factconsolidation_mh_6k.json"
    real, synthetic = by_source["real"]["score"], by_source["synthetic"]["score"]
    table = facts_markdown(rows)
    assert f"| tepa | {real:.2f} / {synthetic:.2f} (0.04) | {real:.2f} / {synthetic:.2f} (0.04) |" in table
    assert "Where tepa's chains break (newest), official MH-6k (455 facts): correct" in table
    assert "`memory-order`" in table
    assert all("breakdown" in q and "hops" in q for q in by_source["real"]["questions"])


def test_the_oracle_bounds_are_not_applicable_on_facts(real_rows):
    rows = reproduce_facts(methods=("tepa", "oracle-view"), lengths=("6k",), splits=("sh",), data_dir=real_rows,
                           with_extra_rows=False)
    assert {row["score"] for row in rows if row["method"] == "oracle-view"} == {0.0}  # it shows nothing here
    table = facts_markdown(rows)
    assert "| oracle-view | n/a | n/a |" in table and "bound nothing" in table
