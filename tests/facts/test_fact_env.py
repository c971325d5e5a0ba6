import gymnasium as gym
import pytest

from tepa_envs.agents.evaluation.analysis.settings import front_end_differences, settings_for
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401
from tepa_envs.agents import METHOD_NAMES, MemoryAgent, run_episode
from tepa_envs.agents.evaluation.outputs.facts_tables import format_facts_table
from tepa_envs.agents.evaluation.studies.facts import reproduce_facts, score_method
from tepa_envs.core import Evidence
from tepa_envs.facts.env import FactConsolidationEnv
from tepa_envs.facts.data import generate_records
from tepa_envs.facts.shaped import generate_shaped
from tepa_envs.facts.loader import write_records

ENV_ID = "TEPA/FactConsolidation-v0"


def roll(env: gym.Env, seed: int, answer: str = "") -> list[tuple]:
    _, info = env.reset(seed=seed)
    steps = [(None, info)]
    done = False
    while not done:
        _, reward, done, _, info = env.step(answer)
        steps.append((reward, info))
    return steps


def test_check_env_passes_for_both_splits(tmp_path):
    check_env(gym.make(ENV_ID, split="sh", length="6k").unwrapped)  # generated records, rebuilt per seed
    path = write_records(generate_shaped("6k", 0).values(), tmp_path / "facts.json")
    check_env(gym.make(ENV_ID, split="mh", length="6k", data_path=path).unwrapped)  # one loaded record


def test_memorize_steps_stream_every_fact_as_asserted_evidence():
    env = gym.make(ENV_ID, split="sh", length="6k", chunk_facts=40, info_schema="rich")
    steps = roll(env, seed=0)
    assert len(steps) == 1 + 12 + 100
    _, first = steps[0]
    assert first["key"] == "" and first["context"].startswith("0. ")
    assert first["oracle"]["phase_name"] == "memorize" and first["evidence"] == []
    evidence = [e for _, info in steps[1:13] for e in info["evidence"]]
    assert [e.t for e in evidence] == list(range(455))
    assert all(isinstance(e, Evidence) and e.outcome is None and e.source == "fact" for e in evidence)
    assert all(e.key.count("|") == 1 for e in evidence)
    assert all("success" not in info and reward == 0.0 for reward, info in steps[1:13])
    presenting_first_question = steps[12][1]
    assert presenting_first_question["oracle"]["phase_changed"] is True
    assert presenting_first_question["oracle"]["phase"] == 1
    assert presenting_first_question["key"] == ""  # the reader maps the question text
    assert presenting_first_question["context"].endswith("?")
    assert sum(info["oracle"]["phase_changed"] for _, info in steps[:-1]) == 1
    assert "oracle" not in steps[-1][1] and all("success" in info for _, info in steps[13:])


def test_multi_hop_questions_carry_their_chain_with_the_template_front_end():
    env = gym.make(ENV_ID, split="mh", length="6k", extraction="templates", generator="classic", info_schema="rich")
    steps = roll(env, seed=0)
    chains = [info["chain"] for _, info in steps[12:-1]]
    assert len(chains) == 100 and {len(c) for c in chains} == {1, 2, 3}


def test_same_seed_same_episode_and_seed_changes_the_facts():
    env = gym.make(ENV_ID, split="mh", length="6k")
    a, b = roll(env, seed=5, answer="x"), roll(env, seed=5, answer="x")
    assert [info for _, info in a] == [info for _, info in b]
    c = roll(env, seed=6, answer="x")
    assert a[0][1]["context"] != c[0][1]["context"]


def test_run_episode_scores_the_question_steps_only(needs_wordnet):
    env = gym.make(ENV_ID, split="sh", length="6k")
    result = run_episode(env, MemoryAgent("tepa", reading="question"), seed=0)
    assert result.success.shape == (100,) and result.success.mean() >= 0.8  # measured 0.83
    assert list(result.phase) == [1] * 100
    multi_hop = gym.make(ENV_ID, split="mh", length="6k", extraction="templates", generator="classic")
    assert run_episode(multi_hop, MemoryAgent("tepa", reading="chain"), seed=0, decide_phases=(1,)).success.all()
    assert run_episode(multi_hop, MemoryAgent("tepa"), seed=0, decide_phases=(1,)).success.mean() < 0.5


def test_answers_are_scored_by_substring_exact_match():
    env = gym.make(ENV_ID, split="sh", length="6k", render_mode="ansi")
    _, info = env.reset(seed=0)
    while info["oracle"]["phase"] == 0:
        _, _, _, _, info = env.step("ignored")
    gold = info["oracle"]["correct"]
    _, reward, _, _, after = env.step(f"I believe the answer is {gold.upper()}!")
    assert reward == 1.0 and after["success"] is True
    assert "ok" in env.render()
    _, reward, _, _, after = env.step("nobody")
    assert reward == 0.0 and after["success"] is False


def test_paper_pattern_at_6k_and_multi_hop_beyond_the_paper(needs_wordnet):
    rows = reproduce_facts(methods=("tepa", "lww", "tepa-norev", "append-only", "temporal-recency"),
                           lengths=("6k",), sources=("synthetic",))
    score = {(r["split"], r["method"]): r["score"] for r in rows if r["reader"] == "newest"}
    assert {r["reader"] for r in rows} == {"newest", "memory-order"}
    assert all(r["n_questions"] == 100 for r in rows)
    assert score[("sh", "tepa")] == score[("sh", "lww")]
    assert score[("sh", "tepa")] >= score[("sh", "tepa-norev")] + 0.5
    assert score[("sh", "tepa")] >= score[("sh", "append-only")]  # one front-end: the same key lookup
    assert score[("mh", "tepa")] >= 0.58  # measured 0.58 (general template pool; 0.53 with father and mother
    #                                       merged into one key; 0.89 on the development-shaped one)
    paper = {(r["split"], r["method"]): r["paper"] for r in rows}
    assert paper[("sh", "tepa")] == 0.89 and paper[("mh", "lww")] is None
    table = format_facts_table(rows)
    assert "SH-6k" in table and "MH-6k" in table and "(0.89)" in table
    assert "official / generated" in table and "append-only-bm25" in table  # the paper's BM25 front-end, own row
    assert max(len(line) for line in table.splitlines() if line.startswith(("method ", "tepa "))) <= 100
    # under the newest reader the BM25 rows' own key is read newest first too: about append-only's.
    # On the general pool's wording its lexical retrieval reads one single-hop question the shared
    # reader misses (measured SH 0.85 vs 0.84; at most append-only's on the development wording)
    assert abs(round(100 * (score[("sh", "append-only-bm25")] - score[("sh", "append-only")]))) <= 1  # questions
    assert score[("mh", "append-only-bm25")] <= score[("mh", "append-only")]   # measured 0.02 vs 0.58


def test_loaded_records_stream_like_generated_ones(tmp_path, needs_wordnet):
    path = write_records(generate_records("6k", seed=0).values(), tmp_path / "facts.jsonl")
    from_file = gym.make(ENV_ID, split="mh", length="6k", data_path=path)
    generated = gym.make(ENV_ID, split="mh", length="6k", generator="classic")
    assert [i for _, i in roll(from_file, seed=9)] == [i for _, i in roll(generated, seed=0)]
    assert score_method(from_file, "tepa", seed=1)[0] >= 0.75  # measured 0.82
    with pytest.raises(ValueError, match="factconsolidation_sh_32k"):
        gym.make(ENV_ID, split="sh", length="32k", data_path=path)


def test_every_method_shares_one_front_end():
    assert front_end_differences(ENV_ID, list(METHOD_NAMES)) == {}
    assert settings_for(ENV_ID).method_kwargs == {}


def test_the_evaluation_reads_questions_as_the_tables_first_reader():
    # `tepa-bench run` and evaluate() score as the facts table's `newest` column: the
    # change detectors show the first-written record first, and under the literal
    # first-record reading ("question") they fell with the keep-everything memories
    assert settings_for(ENV_ID).reading == "question-newest"
    env = gym.make(ENV_ID, split="sh", length="6k")
    for method in ("cusum", "adwin", "tepa"):
        assert score_method(env, method, 0)[0] == score_method(env, method, 0, "newest")[0]
    assert score_method(env, "cusum", 0)[0] > score_method(env, "append-only", 0, "memory-order")[0] + 0.3
    env.close()


def test_bad_arguments_and_actions_are_refused():
    with pytest.raises(ValueError, match="split must be one of sh, mh"):
        gym.make(ENV_ID, split="xx")
    with pytest.raises(ValueError, match="length must be one of"):
        gym.make(ENV_ID, length="1k")
    with pytest.raises(ValueError, match="chunk_facts must be >= 1"):
        gym.make(ENV_ID, chunk_facts=0)
    env = FactConsolidationEnv()
    with pytest.raises(ResetNeeded, match="reset"):
        env.step("x")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="action must be a str"):
        env.step(3)
    roll(env, seed=0)
    with pytest.raises(ResetNeeded, match="episode has ended"):
        env.step("x")
    with pytest.raises(ValueError, match="unknown memory method"):
        reproduce_facts(methods=("nope",), lengths=("6k",))


def test_a_record_of_another_split_is_refused_not_silently_used(real_rows):
    path = real_rows / "factconsolidation_sh_6k.json"
    assert gym.make(ENV_ID, split="sh", length="6k", data_path=path).unwrapped.split == "sh"
    with pytest.raises(ValueError, match="factconsolidation_mh_6k.*factconsolidation_sh_6k"):
        gym.make(ENV_ID, split="mh", length="6k", data_path=path)
