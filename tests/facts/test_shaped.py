"""The shaped generator: the official rows' episode shape in the general pool's wording.

Its sentence and question forms come from the general pool (tepa_envs/facts/templates.py),
not from the development rows: the official 6k rows' templates (their entities replaced
by slots, as issue 24's reviewer counted them: 35 fact and 31 single-hop question
templates) occur nowhere in the pool or in the questions it generates.
"""

import hashlib
import json
import re
import subprocess
import sys

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents.evaluation.studies.facts import score_method
from tepa_envs.facts.data import LENGTHS
from tepa_envs.facts.extraction import induce_facts
from tepa_envs.facts.loader import load_records, parse_context, validate_record
from tepa_envs.facts.shaped import NEVER_OVERRIDDEN_SH, OVERRIDE_SHARE, generate_shaped, record_forms
from tepa_envs.facts.templates import FACT_SCHEMAS, SHAPED_RELATIONS

ENV_ID = "TEPA/FactConsolidation-v0"


def _slot_pattern(form: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(form).replace(r"\{s\}", "(?P<s>.+?)").replace(r"\{o\}", "(?P<o>.+)") + "$")


def ground_truth(length: str, seed: int, context: str) -> list[tuple[str, str]]:
    """(subject|relation, object) of every fact, read with the forms the record was drawn in."""
    # the most specific form first ("The country of origin of {s} is {o}." before "The country of {s} is {o}.")
    forms = [(n, _slot_pattern(form)) for n, form in sorted(enumerate(record_forms(length, seed)),
                                                             key=lambda item: -len(item[1]))]
    out = []
    for _, text in parse_context(context):
        for n, pattern in forms:
            match = pattern.match(text)
            if match:
                out.append((f"{match['s']}|{n}", match["o"]))
                break
        else:
            raise AssertionError(f"a fact in no form: {text}")
    return out


# ------------------------------------------------------------ templates of a record
def _spans(text: str, entity: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"(?<!\w)" + re.escape(entity) + r"(?!\w)", text)]


def _replace(text: str, entity: str, slot: str) -> str:
    spans = _spans(text, entity)
    return text if not spans else text[:spans[0][0]] + slot + text[spans[0][1]:]


def _template(text: str, subject: str, obj: str) -> str:
    """``text`` with one occurrence of each entity, not overlapping, replaced by its slot."""
    for s in _spans(text, subject):
        for o in _spans(text, obj):
            if s[1] <= o[0] or o[1] <= s[0]:
                parts = sorted(((s, "{s}"), (o, "{o}")), reverse=True)
                for (start, end), slot in parts:
                    text = text[:start] + slot + text[end:]
                return text
    raise AssertionError(f"no place for {subject!r} and {obj!r} in {text!r}")


def fact_templates(context: str) -> set[str]:
    """Each fact sentence with its subject and object replaced by ``{s}`` and ``{o}``
    (the entities as the record's own induced facts read them)."""
    texts = [t for _, t in parse_context(context)]
    out = set()
    for text, fact in zip(texts, induce_facts(texts)):
        assert fact is not None, text
        out.add(_template(text, fact.subject, fact.object))
    return out


def entities(context: str) -> list[str]:
    texts = [t for _, t in parse_context(context)]
    return sorted({e for f in induce_facts(texts) if f for e in (f.subject, f.object)}, key=len, reverse=True)


def question_templates(questions: list[str], names: list[str]) -> set[str]:
    """Each question with the longest entity of the record it names replaced by ``{s}``."""
    out = set()
    for question in questions:
        entity = next(e for e in names if e in question and _spans(question, e))
        out.add(_replace(question, entity, "{s}"))
    return out


def _norm(template: str) -> str:
    return " ".join(template.lower().rstrip(".?").split())


@pytest.fixture(scope="module")
def development(real_rows):
    rows = {s: load_records(real_rows / f"factconsolidation_{s}_6k.json")[0] for s in ("sh", "mh")}
    names = entities(rows["sh"]["context"])
    return (fact_templates(rows["sh"]["context"]), question_templates(rows["sh"]["questions"], names),
            question_templates(rows["mh"]["questions"], names))


def test_the_reviewers_count_of_development_templates(development):
    facts, sh_questions, mh_questions = development
    assert (len(facts), len(sh_questions), len(mh_questions)) == (35, 31, 100)
    assert "{s} is married to {o}." in facts and "Who is {s} married to?" in sh_questions


def test_no_development_template_is_in_the_general_pool(development):
    facts, sh_questions, mh_questions = development
    pool_facts = {_norm(f) for r in SHAPED_RELATIONS for f in r.facts}
    pool_questions = {_norm(q) for r in SHAPED_RELATIONS for q in (*r.questions, *(f.replace("{x}", "{s}")
                                                                                   for f in r.finals))}
    assert not {_norm(f) for f in facts} & pool_facts
    assert not {_norm(q) for q in sh_questions | mh_questions} & pool_questions
    # and none in the records the pool generates (questions with their anchor replaced)
    for length in ("6k", "32k"):
        records = generate_shaped(length, 0)
        truth = ground_truth(length, 0, records["sh"]["context"])
        names = sorted({n for key, value in truth for n in (key.rsplit("|", 1)[0], value)}, key=len, reverse=True)
        generated_facts = {_norm(f) for f in record_forms(length, 0)}
        generated_questions = {_norm(q) for s in ("sh", "mh") for q in question_templates(records[s]["questions"], names)}
        assert not {_norm(f) for f in facts} & generated_facts
        assert not {_norm(q) for q in sh_questions | mh_questions} & generated_questions


def test_a_development_template_pasted_into_the_pool_is_caught(development):
    facts, sh_questions, _ = development
    pasted = SHAPED_RELATIONS[0].__class__("P26", "spouse", "person", "person", "spouse", ("{s} is married to {o}.",),
                                           ("Who is {s} married to?",))
    assert {_norm(f) for f in facts} & {_norm(f) for f in pasted.facts}
    assert {_norm(q) for q in sh_questions} & {_norm(q) for q in pasted.questions}


def test_the_pool_is_general_english_forms_of_wikidata_properties():
    assert len(SHAPED_RELATIONS) >= 40 and all(re.fullmatch(r"P\d+", r.pid) for r in SHAPED_RELATIONS)
    for relation in SHAPED_RELATIONS:
        schema_forms = relation.facts[:len(FACT_SCHEMAS)]
        assert schema_forms == (f"The {relation.noun} of {{s}} is {{o}}.", f"{{s}}'s {relation.noun} is {{o}}.",
                                f"{{o}} is the {relation.noun} of {{s}}.")
        for form in relation.verbs:   # verbal forms state the subject first, the object last
            assert form.startswith("{s} ") and form.endswith(" {o}.")
    names = [r.name for r in SHAPED_RELATIONS]
    assert len(set(names)) == len(names)


# ------------------------------------------------------------ shape, sizes, determinism
@pytest.mark.parametrize("length", ["6k", "32k"])
def test_shape_matches_the_official_rows(length):
    records = generate_shaped(length, 3)
    for record in records.values():
        validate_record(record)
        assert len(record["questions"]) == 100
    facts = ground_truth(length, 3, records["sh"]["context"])
    assert len(facts) == LENGTHS[length]
    values: dict[str, list[str]] = {}
    for key, value in facts:
        values.setdefault(key, []).append(value)
    overridden = sum(len(v) > 1 for v in values.values()) / len(values)
    assert abs(overridden - OVERRIDE_SHARE) <= 0.03
    assert all(len(v) <= 2 and len(set(v)) == len(v) for v in values.values())
    newest = {key: v[-1] for key, v in values.items()}
    assert {a[0] for a in records["sh"]["answers"]} <= set(newest.values())
    # a quarter of the single-hop questions are about keys never overridden
    once = {v[0] for v in values.values() if len(v) == 1}
    share = sum(a[0] in once for a in records["sh"]["answers"]) / 100
    assert share >= NEVER_OVERRIDDEN_SH - 0.05
    assert len(set(records["mh"]["questions"])) >= 95
    # one form per relation in a record, and several relations in each general shape
    used = {form for form in record_forms(length, 3)}
    for name, schema in FACT_SCHEMAS.items():
        assert sum(form == schema.format(n=r.noun) for r, form in zip(SHAPED_RELATIONS, record_forms(length, 3))) >= 2, name
    assert any(form in r.verbs for r, form in zip(SHAPED_RELATIONS, record_forms(length, 3))) and len(used) >= 30


def test_no_name_is_inside_another_name():
    """Substring exact match never credits a wrong entity: no entity's name occurs in another's."""
    records = generate_shaped("262k", 0)
    names = {n.lower() for key, value in ground_truth("262k", 0, records["sh"]["context"])
             for n in (key.rsplit("|", 1)[0], value)}
    assert len(names) > 20000
    by_window: dict[str, list[str]] = {}
    for name in names:
        for i in range(len(name) - 5):
            by_window.setdefault(name[i:i + 6], []).append(name)
    inside = [(name, other) for name in names for other in by_window.get(name[:6], ())
              if other != name and name in other]
    assert not inside, inside[:5]


@pytest.mark.parametrize("length", list(LENGTHS))
def test_every_size_builds(length):
    records = generate_shaped(length, 0)
    assert set(records) == {"sh", "mh"} and records["sh"]["context"] == records["mh"]["context"]
    assert len(parse_context(records["sh"]["context"])) == LENGTHS[length]
    for split, record in records.items():
        validate_record(record)
        assert record["metadata"]["source"] == f"factconsolidation_{split}_{length}"
        assert len(record["questions"]) == len(record["answers"]) == 100


def _digest(records: dict) -> str:
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()


def test_same_seed_same_records_in_every_process_and_the_seed_matters():
    assert generate_shaped("6k", 1) == generate_shaped("6k", 1)
    assert generate_shaped("6k", 1)["sh"]["context"] != generate_shaped("6k", 2)["sh"]["context"]
    assert record_forms("6k", 1) != record_forms("6k", 2)
    code = ("import hashlib, json; from tepa_envs.facts.shaped import generate_shaped; "
            "print(hashlib.sha256(json.dumps(generate_shaped('6k', 1), sort_keys=True).encode()).hexdigest())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert out.stdout.strip() == _digest(generate_shaped("6k", 1))
    with pytest.raises(ValueError, match="length"):
        generate_shaped("5k", 0)
    with pytest.raises(ValueError, match="seed"):
        record_forms("6k", -1)


def test_shaped_records_through_the_shared_front_end(needs_wordnet):
    sh = gym.make(ENV_ID, split="sh", length="6k")
    assert sh.unwrapped.generator == "shaped"
    assert score_method(sh, "tepa", 0)[0] >= 0.84          # measured 0.84 (0.83 with father and mother
    #                                                        merged into one key; development-shaped pool: 0.91)
    norev = score_method(sh, "tepa-norev", 0)[0]
    assert abs(norev - NEVER_OVERRIDDEN_SH) <= 0.05          # NoRev answers the never-overridden quarter
    mh = gym.make(ENV_ID, split="mh", length="6k")
    assert score_method(mh, "tepa", 0)[0] >= 0.58            # measured 0.58 (0.53 with father and mother
    #                                                          merged; development-shaped pool: 0.89)
    assert score_method(mh, "tepa-norev", 0)[0] <= 0.1       # every chain has an overridden hop
    with pytest.raises(ValueError, match="generator must be one of shaped, classic"):
        gym.make(ENV_ID, generator="mab")
