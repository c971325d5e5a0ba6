"""Data-driven fact extraction on sentence forms it has never seen.

The held-out forms below appear nowhere in tepa_envs/facts/extraction.py (nor
in the generator's templates): the extractor must induce their frames from the
record itself, and the reader must map the questions onto them.
"""

import json

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents import make_memory
from tepa_envs.agents.evaluation.facts import score_method
from tepa_envs.facts.extraction import induce_facts, match_question

ENV_ID = "TEPA/FactConsolidation-v0"

# held-out fact forms and questions: (fact, question)
FORMS = {
    "pet": ("{s} keeps a pet named {o}.", "What is the name of {s}'s pet?"),
    "colour": ("The favourite colour of {s} is {o}.", "What is the favourite colour of {s}?"),
    "commute": ("{s} commutes to work by {o}.", "How does {s} commute to work?"),
    "trade": ("{s} was trained as a {o}.", "What was {s} trained as?"),
}
PEOPLE = ["Mira Tolland", "Osric Vane", "Petra Quillon", "Dov Hartigan", "Lena Sorbet", "Yusuf Amari",
          "Greta Holm", "Ivo Marsh"]
VALUES = {
    "pet": ["Biscuit", "Captain Whiskers", "Nugget", "Pepper", "Rolo", "Sir Fluff", "Mochi", "Ziggy",
            "Tofu", "Bramble", "Odin", "Clementine"],
    "colour": ["teal", "crimson", "ochre", "lilac", "navy blue", "saffron", "mint green", "charcoal",
               "amber", "coral", "indigo", "olive"],
    "commute": ["bicycle", "tram", "ferry", "electric scooter", "bus", "car", "train", "canoe",
                "motorbike", "horse", "skateboard", "cable car"],
    "trade": ["carpenter", "glassblower", "pastry chef", "welder", "luthier", "nurse", "stonemason",
              "pilot", "tailor", "locksmith", "baker", "jeweller"],
}


def held_out_record():
    facts, latest = [], {}
    for i, person in enumerate(PEOPLE):
        for form, (fact, _) in FORMS.items():
            value = VALUES[form][i]
            facts.append(fact.format(s=person, o=value))
            latest[person, form] = value
    for i, person in enumerate(PEOPLE[:4]):  # overrides: newer facts, other values
        for form, (fact, _) in FORMS.items():
            value = VALUES[form][8 + i]
            facts.append(fact.format(s=person, o=value))
            latest[person, form] = value
    questions = [(FORMS[form][1].format(s=person), value) for (person, form), value in latest.items()]
    record = {
        "context": "Here is a list of facts:\n" + "\n".join(f"{n}. {f}" for n, f in enumerate(facts)),
        "questions": [q for q, _ in questions],
        "answers": [[a] for _, a in questions],
        "metadata": {"source": "factconsolidation_sh_6k"},
    }
    return record, facts, latest


def test_held_out_forms_are_induced_with_their_subjects_and_objects():
    _, facts, latest = held_out_record()
    induced = induce_facts(facts)
    keyed = [f for f in induced if f is not None]
    assert len(keyed) >= 0.9 * len(facts)
    assert {f.frame for f in keyed} >= {"{S} keeps a pet named {O}", "The favourite colour of {S} is {O}"}
    newest = {}
    for fact in keyed:
        newest[fact.key] = fact.object
    assert len(newest) == len(latest)  # overrides share subject and frame
    assert sorted(newest.values()) == sorted(latest.values())


def test_held_out_questions_map_to_the_induced_keys():
    record, facts, _ = held_out_record()
    keys = [f.key for f in induce_facts(facts) if f is not None]
    assert match_question("What is the name of Osric Vane's pet?", keys) == "Osric Vane|{S} keeps a pet named {O}"
    assert match_question("How does Ivo Marsh commute to work?", keys) == "Ivo Marsh|{S} commutes to work by {O}"
    assert match_question("What is the name of Nobody's pet?", keys) == ""
    mapped = [match_question(q, keys) for q in record["questions"]]
    assert sum(bool(k) for k in mapped) >= 0.9 * len(mapped)


def test_held_out_record_through_the_env_and_reader(tmp_path):
    record, _, _ = held_out_record()
    path = tmp_path / "held_out.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    env = gym.make(ENV_ID, split="sh", length="6k", data_path=path)
    evidence = env.unwrapped._loaded.evidence
    assert sum(e is not None for e in evidence) >= 0.9 * len(evidence)
    _, info = env.reset(seed=0)
    assert env.unwrapped.known_keys() == ()
    score, n = score_method(env, "tepa", 0)
    assert n == len(record["questions"]) and score >= 0.9
    assert score_method(env, "lww", 0)[0] >= 0.9
    assert score_method(env, "tepa-norev", 0)[0] < 0.9  # the overrides matter
    assert score_method(env, "no-memory", 0)[0] == 0.0


def test_extraction_argument_is_checked_and_templates_are_kept_for_generated_records():
    with pytest.raises(ValueError, match="extraction"):
        gym.make(ENV_ID, extraction="regex")
    env = gym.make(ENV_ID, split="sh", length="6k")
    _, info = env.reset(seed=0)
    assert "{S}" not in "".join(env.unwrapped.data.evidence[0].key)


def test_official_single_hop_row_is_keyed_by_induced_frames(real_rows):
    env = gym.make(ENV_ID, split="sh", length="6k", data_path=real_rows / "factconsolidation_sh_6k.json")
    evidence = env.unwrapped._loaded.evidence
    assert sum(e is not None for e in evidence) >= 0.95 * len(evidence)  # measured 455 / 455
    assert any(e.key == "Victoria Beckham|{S} is married to {O}" for e in evidence if e is not None)
    assert score_method(env, "tepa", 0)[0] >= 0.95  # measured 1.00 (0.24 with the templates)
    assert score_method(env, "lww", 0)[0] >= 0.95
    assert score_method(env, make_memory("append-only"), 0)[0] >= 0.95
    assert score_method(env, "tepa-norev", 0)[0] <= 0.5
