"""Fact extraction and question understanding on seen and held-out sentence forms.

Seen forms: the generator's templates and the official MemoryAgentBench rows (the
development data). Held-out forms (tests/facts/held_out.py): written for these
tests only, absent from the extractor, the question reader, the lexicon and the
generator (checked below). Targets (issue 13): extraction coverage >= 90 % and
single-hop EM within 0.05 of the seen forms.
"""

import importlib.util
import json
import re
from collections import namedtuple
from pathlib import Path

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation.studies.facts import score_method
from tepa_envs.agents.readers.lexicon import RELATION_LEXICON
from tepa_envs.agents.readers.questions import FactIndex, alike, answer_question
from tepa_envs.facts.extraction import induce_facts
from tepa_envs.facts.loader import parse_context
from tepa_envs.facts.metric import substring_exact_match


def _load_held_out():
    spec = importlib.util.spec_from_file_location("held_out", Path(__file__).with_name("held_out.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


held_out = _load_held_out()
FORMS, held_out_records = held_out.FORMS, held_out.held_out_records

ENV_ID = "TEPA/FactConsolidation-v0"
ROOT = Path(__file__).resolve().parents[2]
Shown = namedtuple("Shown", "value created")


def newest_memory(context: str):
    """(index, retrieve) of a memory that keeps the newest value per induced key."""
    facts = parse_context(context)
    newest = {}
    for (serial, _), fact in zip(facts, induce_facts([text for _, text in facts])):
        if fact is not None:
            newest[fact.key] = Shown(fact.object, serial)
    return FactIndex(newest), lambda key: [newest[key]] if key in newest else []


def exact_match(record, lexicon=None, use_wordnet=True) -> float:
    index, retrieve = newest_memory(record["context"])
    hits = [substring_exact_match(answer_question(q, index, retrieve, lexicon=lexicon,
                                                  use_wordnet=use_wordnet).answer, a)
            for q, a in zip(record["questions"], record["answers"])]
    return sum(hits) / len(hits)


# ------------------------------------------------------------------ held-out forms
def test_held_out_forms_appear_nowhere_in_the_front_end_or_the_generator():
    sources = " ".join((ROOT / path).read_text(encoding="utf-8").lower() for path in (
        "tepa_envs/facts/extraction.py", "tepa_envs/facts/data.py", "tepa_envs/facts/templates.py",
        "agents/readers/questions.py", "agents/readers/lexicon.py") if (ROOT / path).exists())
    for _, _, fact, question, _ in FORMS.values():
        for text in (fact, question):
            for part in re.split(r"\{[so]\}", text.lower()):
                words = part.strip(" .?'s").split()
                if len(words) >= 3:  # a constant phrase of three or more words
                    assert " ".join(words) not in sources, f"held-out phrase {part!r} is in the front-end"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_held_out_forms_are_extracted_with_their_subjects_and_objects(seed):
    records = held_out_records(seed)
    facts = parse_context(records["sh"]["context"])
    induced = induce_facts([text for _, text in facts])
    truth = records["world"]["facts"]
    correct = sum(f is not None and f.subject == s and f.object == v for f, ((s, _), v) in zip(induced, truth))
    assert correct >= 0.9 * len(truth)  # measured 100 %
    frames = {f.frame for f in induced if f is not None}
    assert {"{S} keeps a pet named {O}", "The favourite colour of {S} is {O}", "{S} lies on the river {O}"} <= frames


def test_held_out_single_hop_em_is_within_005_of_the_seen_forms(real_rows, needs_wordnet):
    seen = exact_match(json.loads((real_rows / "factconsolidation_sh_6k.json").read_text())[0])
    held = [exact_match(held_out_records(seed)["sh"]) for seed in range(3)]
    assert seen >= 0.95  # measured 0.99
    # issue 13's target (within 0.05) is met again: measured 0.97 / 0.96 / 0.94 since name words go
    # back to the entities before a frame is judged bare (0.89 / 0.84 / 0.89 before, 0.10-0.15
    # below the seen forms, after the lexicon lost its entries taken from the development rows)
    assert round(seen - min(held), 2) <= 0.05


def test_held_out_multi_hop_and_the_lexicon_plug_in(needs_wordnet):
    records = held_out_records(0)
    default = exact_match(records["mh"])          # WordNet, no lexicon (the default)
    assert default >= 0.75                         # measured 0.83
    assert exact_match(records["mh"], lexicon=RELATION_LEXICON) >= 0.75  # the optional plug-in
    assert exact_match(records["sh"]) >= 0.97      # measured 0.97 (0.89 before name words went back first)


def test_held_out_record_through_the_env_and_every_front_end_shared(tmp_path, needs_wordnet):
    records = held_out_records(1)
    path = tmp_path / "held_out.json"
    path.write_text(json.dumps([records["sh"], records["mh"]]), encoding="utf-8")
    sh = gym.make(ENV_ID, split="sh", length="6k", data_path=path)
    assert sh.unwrapped.known_keys() == ()
    tepa = score_method(sh, "tepa", 0)[0]
    assert tepa >= 0.96  # measured 0.96 (0.84 before name words went back to the entities first)
    assert score_method(sh, "lww", 0)[0] == tepa
    assert score_method(sh, "append-only", 0)[0] == tepa  # same key lookup as TEPA
    norev = score_method(sh, "tepa-norev", 0)[0]
    # NoRev answers at most the questions about facts never overridden (those it understands)
    assert norev <= records["world"]["never_overridden_sh"] + 0.05 and norev < tepa
    assert score_method(sh, "no-memory", 0)[0] == 0.0
    mh = gym.make(ENV_ID, split="mh", length="6k", data_path=path)
    assert score_method(mh, "tepa", 0)[0] >= 0.75


# ------------------------------------------------------------------ question reading
def test_question_reading_follows_the_memorys_current_value_at_every_hop():
    context = "\n".join(["Here is a list of facts:",
                         "0. Ada Quill is married to Bo Fenn.", "1. Bo Fenn died in the city of Oslo.",
                         "2. Cy Dorn is married to Di Arle.", "3. Cy Dorn died in the city of Rome.",
                         "4. Ada Quill is married to Cy Dorn.", "5. Ed Voss died in the city of Lima."])
    index, retrieve = newest_memory(context)
    reading = answer_question("Where did the spouse of Ada Quill pass away?", index, retrieve)
    assert reading.answer == "Rome"  # hop 1 sees the newer spouse, Cy Dorn
    assert [(h.key, h.value, h.t) for h in reading.hops] == [
        ("Ada Quill|{S} is married to {O}", "Cy Dorn", 4), ("Cy Dorn|{S} died in the city of {O}", "Rome", 3)]
    stale = {"Ada Quill|{S} is married to {O}": [Shown("Bo Fenn", 0)]}
    old = answer_question("Where did the spouse of Ada Quill pass away?", index,
                          lambda key: stale.get(key) or retrieve(key))
    assert old.answer == "Oslo" and old.hops[0].value == "Bo Fenn"
    assert answer_question("Where did Nobody Known pass away?", index, retrieve).failure == "no anchor"


def _facts(*lines: str):
    return newest_memory("\n".join(["Here is a list of facts:", *(f"{n}. {t}" for n, t in enumerate(lines))]))


def test_a_bridge_stands_for_a_question_word_no_hop_explains(needs_wordnet):
    # "lives next door" is all explained by Bo's frame: a bridge through Ada's neighbour
    # would stand for nothing; Ada's own neighbour fact is read through *neighbour*'s
    # definition ("a person who lives near another")
    index, retrieve = _facts("The neighbour of Ada Quill is Bo Fenn.", "Bo Fenn lives next door to Cy Dorn.",
                             "Cy Dorn lives next door to Di Arle.")
    reading = answer_question("Who lives next door to Ada Quill?", index, retrieve)
    assert reading.answer == "Bo Fenn" and len(reading.hops) == 1


def test_a_chain_leaving_relation_words_out_is_read_again_with_definitions(needs_wordnet):
    # one hop explains "choir" and leaves "neighbour"; the definitions' reading explains both
    index, retrieve = _facts("Ada Quill lives next door to Bo Fenn.", "Bo Fenn sings in the choir Vale Choir.",
                             "Ada Quill sings in the choir Moor Choir.", "Cy Dorn lives next door to Ada Quill.")
    reading = answer_question("What is the choir of the neighbour of Ada Quill?", index, retrieve)
    assert reading.answer == "Vale Choir" and [h.value for h in reading.hops] == ["Bo Fenn", "Vale Choir"]


def test_the_kind_of_answer_asked_for_is_not_a_relation_to_explain(needs_wordnet):
    # "country" says what the answer is; a hop past the citizenship explaining it by a
    # definition ("state": a country) would answer the head of state instead
    index, retrieve = _facts(*(f"{p} is a citizen of {c}." for p, c in (("Ada Quill", "Norway"),
                                                                       ("Bo Fenn", "Chile"), ("Cy Dorn", "Peru"))),
                             *(f"The name of the current head of state in {c} is {h}." for c, h in (
                                 ("Norway", "Harald V"), ("Chile", "Gabriel Boric"), ("Peru", "Dina Boluarte"))))
    assert answer_question("What is the country of citizenship of Ada Quill?", index, retrieve).answer == "Norway"


def test_alike_is_inflection_not_prefix():
    assert alike("educated", "education") and alike("citizenship", "citizen") and alike("founder", "founded")
    assert not alike("head", "headquarters") and not alike("city", "citizen")


def test_official_rows_with_and_without_the_relation_lexicon(real_rows, needs_wordnet):
    rows = {split: json.loads((real_rows / f"factconsolidation_{split}_6k.json").read_text())[0]
            for split in ("sh", "mh")}
    assert exact_match(rows["sh"]) >= 0.95               # measured 0.99: single-hop needs no lexicon
    assert exact_match(rows["mh"]) >= 0.75               # measured 0.77 with WordNet (0.84 with the removed
    #                                                      lexicon fitted to these rows; 0.70 before the
    #                                                      reader's bridge and definition rules)
    assert exact_match(rows["mh"], use_wordnet=False) >= 0.60  # measured 0.65: stems alone
