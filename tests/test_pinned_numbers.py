"""Small fixed-seed runs of every reproduced setting, pinned to exact per-task
success counts (``tests/data/pinned_numbers.json``).

A refactor must not move a single count. Where behaviour is changed on purpose,
the file is regenerated in the same commit and the change said in its message.
History: pinned before the package was reorganised (issue 10; unchanged by it);
regenerated when the preference reader and user defaults became principled
(``stated_prob`` 0.15 -> 0.5, ``main_profile_share`` 0.9 -> 0.8: only the
preference entries and trial budgets moved) and ``tepa-paper`` was added.
Facts entries regenerated (issue 13) when every method got one front-end: facts
keyed by frames induced from the record and questions answered by the reader's
chain through the memory, no per-method BM25 retrieval (append-only and the
recency baselines now look keys up as TEPA does), on the generator shaped like
the official rows (``tepa_envs.facts.shaped``; the first generator stays as
``generator="classic"``).
Entries for ``discounted-beta``, ``cusum``, ``bocpd``, ``adwin`` and ``tepa-regime``
added when they were registered (issue 12); no other count moved.
Issue 31: ``oracle-reset`` now clears a key when that key's true value changes (it
cleared every key at each global phase boundary, the reading kept as
``scope="global"``): its ``executable`` (FileOps) and ``preference`` counts moved on
purpose, its ``controlled`` counts did not (one key: the two readings agree);
entries for ``two-strike`` and ``oracle-view`` added when they were registered; no
other method's count moved.
Issue 24: the facts entries moved when the lexicon entries taken verbatim from the
development rows were removed and WordNet took their place (synthetic 6k: SH 0.98 ->
0.83, MH 0.99 -> 0.87 for the methods that resolve conflicts; the generator's
questions still follow the development rows' wording); no other count moved. Moved again
when fact keys were made to survive rewording by general means (commit 9fd4f71: name
words back to entities, genitive shapes read by syntax, frames merged through WordNet
definitions; synthetic 6k: SH 0.83 -> 0.91, MH 0.87 -> 0.89, tepa-norev SH 0.22 -> 0.24,
semantic-retrieval SH 0.61 -> 0.67). Moved again when the shaped generator took its
wording from a general pool of Wikidata properties in general English forms instead of
the development rows' templates (issue 24 item 4; synthetic 6k: SH 0.91 -> 0.83, MH
0.89 -> 0.53 for the methods that resolve conflicts, tepa-norev SH 0.24 -> 0.22,
semantic-retrieval SH 0.67 -> 0.71, MH 0.02 -> 0.03). Moved again when two keying bugs
were fixed by general rules (two genitive frames merge only when their nouns are
WordNet noun synonyms, so *father* and *mother* are two keys; a lower-case head noun
after a sentence-initial name stays in the entity, "Tavora dollar"; name words go back
to the entities before a frame is judged bare; synthetic 6k: SH 0.83 -> 0.84, MH 0.53
-> 0.58 for the methods that resolve conflicts, tepa-norev SH 0.22 -> 0.23,
semantic-retrieval SH 0.71 -> 0.72). Moved again when the question reader got its
bridge, single-explanation and definition re-reading rules (synthetic 6k: MH 0.58 ->
0.64 for the methods that resolve conflicts); no other count moved.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation.analysis.paper import SETTINGS
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.studies.facts import score_method

PINNED = json.loads((Path(__file__).parent / "data" / "pinned_numbers.json").read_text())
FACT_METHODS = ("tepa", "lww", "tepa-norev", "append-only", "temporal-recency", "conflict-aware-recency",
                "reactive-forgetting", "semantic-retrieval")


def _task_counts(evaluation) -> dict[str, list[int]]:
    return {m: [int(x) for x in run.success.sum(axis=0)] for m, run in evaluation.runs.items()}


@pytest.mark.parametrize("name", ["controlled", "executable", "preference"])
def test_setting_per_task_success_counts_over_three_seeds(name):
    setting = SETTINGS[name]
    evaluation = evaluate(setting.env_id, list(setting.methods), range(3), env_kwargs=dict(setting.env_kwargs))
    assert _task_counts(evaluation) == PINNED[name]


def test_key_noise_with_two_keys():
    evaluation = evaluate("TEPA/RegimeDrift-v0", ["tepa", "lww"], range(3), env_kwargs={"key_noise": 0.2, "n_keys": 2})
    assert _task_counts(evaluation) == PINNED["key_noise"]


def test_trial_budgets_on_the_preference_stream():
    evaluation = evaluate("TEPA/PreferenceStream-v0", ["tepa-full", "lww-validation"], range(2))
    assert {m: run.trials for m, run in evaluation.runs.items()} == PINNED["trials"]


@pytest.mark.parametrize("split", ["sh", "mh"])
def test_fact_scores_on_synthetic_6k(split):
    env = gym.make("TEPA/FactConsolidation-v0", split=split, length="6k")
    scores = {f"{split}/{m}": score_method(env, m, 0)[0] for m in FACT_METHODS}
    assert scores == {k: v for k, v in PINNED["facts"].items() if k.startswith(f"{split}/")}


def test_team_example_over_two_seeds():
    sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
    try:
        import shared_memory_team as team
    finally:
        sys.path.pop(0)
    results = {f"{label}/{unreliable}": list(team.team_success(config, unreliable, range(2), 0.3, 3))
               for label, config in team.CONFIGS.items() for unreliable in (False, True)}
    assert results == PINNED["team"]
