"""Question readers under which memories differ (issue 24): ``newest`` (the reader resolves
conflicts by fact order), ``memory-order`` (the memory must) and ``local-lm`` (the packaged
language model reads each hop's records)."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation.outputs.facts_tables import facts_markdown, format_facts_table
from tepa_envs.agents.evaluation.studies.facts import lm_available, reproduce_facts, run_questions, score_method
from tepa_envs.agents.readers.lexicon import RELATION_LEXICON
from tepa_envs.agents.readers.reading import QUESTION_READERS, READINGS
from tepa_envs.core import Evidence

from .conftest import REAL_ROWS

ENV_ID = "TEPA/FactConsolidation-v0"


def _mh_env():
    """The official MH-6k row when present, else generated data (the shaped generator)."""
    path = REAL_ROWS / "factconsolidation_mh_6k.json"
    if path.exists():
        return gym.make(ENV_ID, split="mh", length="6k", data_path=path)
    return gym.make(ENV_ID, split="mh", length="6k")


def test_every_question_reader_is_a_reading():
    assert set(QUESTION_READERS) == {"newest", "memory-order", "local-lm"}
    assert all(f"question-{name}" in READINGS for name in QUESTION_READERS)


def test_under_memory_order_tepa_and_append_only_differ_on_multi_hop(needs_wordnet):
    env = _mh_env()
    newest = {m: score_method(env, m, 0, "newest")[0] for m in ("tepa", "append-only")}
    order = {m: score_method(env, m, 0, "memory-order")[0] for m in ("tepa", "append-only", "lww")}
    assert newest["tepa"] == newest["append-only"]          # the reader resolves: the memories look alike
    assert order["tepa"] == newest["tepa"] == order["lww"]   # TEPA and LWW show the newest value alone
    assert order["append-only"] <= 0.10 < order["tepa"]      # measured 0.00 vs 0.71 (paper: append-only 0.08)


def test_memory_order_reads_what_the_memory_states_not_recency():
    read = QUESTION_READERS["memory-order"]
    newest = QUESTION_READERS["newest"]
    from tepa_envs.agents.memories.registry import make_memory
    shown = {}
    for name in ("append-only", "tepa", "cusum"):
        memory = make_memory(name)
        memory.reset()
        for t, value in enumerate(("Paris", "Rome")):
            memory.observe(Evidence(key="A|{S} lives in {O}", value=value, t=t, outcome=None, source="fact"))
        records = memory.retrieve("A|{S} lives in {O}", "")
        shown[name] = (read(records, None, "A|{S} lives in {O}")[0].value,
                       newest(records, None, "A|{S} lives in {O}")[0].value)
    assert shown["append-only"] == ("Paris", "Rome")   # equal standing: stored first; newest: the reader resolves
    assert shown["tepa"] == ("Rome", "Rome")           # the stale value is not shown
    assert shown["cusum"] == ("Rome", "Rome")          # listed second but stated more valid


def test_reproduce_prints_every_method_under_each_reader():
    rows = reproduce_facts(methods=("tepa", "append-only"), lengths=("6k",), splits=("mh",),
                           sources=("synthetic",), with_extra_rows=False)
    assert [(r["reader"], r["method"]) for r in rows] == [
        ("newest", "tepa"), ("newest", "append-only"), ("memory-order", "tepa"), ("memory-order", "append-only")]
    table = format_facts_table(rows)
    assert "question reader newest" in table and "question reader memory-order" in table
    assert "memory-order: MH-6k" in facts_markdown(rows)
    with pytest.raises(ValueError, match="question reader"):
        reproduce_facts(methods=("tepa",), lengths=("6k",), readers=("oracle",))


def test_local_lm_is_skipped_with_a_reason_or_reads_each_hop(tmp_path):
    missing = lm_available()
    if missing is not None:
        logged = []
        rows = reproduce_facts(methods=("tepa",), lengths=("6k",), splits=("mh",), sources=("synthetic",),
                               readers=("local-lm",), log=logged.append, with_extra_rows=False)
        assert rows == [] and "skipped" in logged[0]
        pytest.skip(f"the local-lm reader is not installed: {missing}")
    context = "\n".join(["Here is a list of facts:", "0. Ada Quill is married to Bo Fenn.",
                         "1. Bo Fenn died in the city of Oslo.", "2. Cy Dorn is married to Di Arle.",
                         "3. Cy Dorn died in the city of Rome.", "4. Ada Quill is married to Cy Dorn.",
                         "5. Ed Voss died in the city of Lima.", "6. Di Arle died in the city of Bern."])
    source = "factconsolidation_mh_6k"
    record = {"context": context, "questions": ["Where did the spouse of Ada Quill die?"], "answers": [["Rome"]],
              "metadata": {"source": source, "qa_pair_ids": [f"{source}_no0"]}}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([record]))
    env = gym.make(ENV_ID, split="mh", length="6k", data_path=path)
    (tepa,) = run_questions(env, "tepa", 0, "local-lm")
    (append_only,) = run_questions(env, "append-only", 0, "local-lm")
    assert tepa["success"]                      # one value a hop: no decision to get wrong
    assert append_only["hops"]                  # the model chose a spouse among the two shown
    assert append_only["answer"] in {"Rome", "Oslo"}


def test_no_lexicon_entry_occurs_in_the_development_rows(real_rows):
    text = []
    for split in ("sh", "mh"):
        for record in json.loads((real_rows / f"factconsolidation_{split}_6k.json").read_text()):
            text += [record["context"].lower(), *(q.lower() for q in record["questions"])]
    blob = "\n".join(text)
    verbatim = [entry for entries in RELATION_LEXICON.values() for entry in entries
                if re.search(r"\b" + re.escape(entry) + r"\b", blob)]
    assert verbatim == []
