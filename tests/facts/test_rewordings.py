"""Held-out rewordings (issue 24): one relation in several surface forms, on relations the
extractor, the question reader and the generators never saw (benchmarks/fact_rewordings.py).

The issue's targets are mixed wording SH >= 0.90 and MH >= 0.60, object first SH >= 0.85,
and questions reworded within 0.05 of the original wording. Mixed MH is reached and
asserted as the target; the others are asserted at their measured values (the docs'
rewording table states every gap), so a regression fails and an improvement shows in
the generated table. The rules were developed on a separate design set
(benchmarks/facts_design_rewordings.py), disjoint from the held-out one (checked below).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("fact_rewordings", ROOT / "benchmarks" / "fact_rewordings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rewordings = _load()


@pytest.fixture(scope="module")
def scores():
    rows = rewordings.score(methods=("tepa", "append-only"))
    return {(r["variant"], r["method"], r["split"]): r["score"] for r in rows}, rows


def test_the_rewordings_are_held_out_from_the_front_end_and_the_generators():
    sources = " ".join((ROOT / path).read_text(encoding="utf-8").lower() for path in (
        "tepa_envs/facts/extraction.py", "tepa_envs/facts/data.py", "tepa_envs/facts/templates.py",
        "tepa_envs/facts/shaped.py", "tepa_envs/facts/wordnet.py", "agents/readers/questions.py",
        "agents/readers/lexicon.py"))
    for _, _, forms, questions, phrases in rewordings.RELATIONS.values():
        for text in (*forms.values(), *questions, *phrases):
            for part in re.split(r"\{[sox]\}", text.lower()):
                words = part.strip(" .?'s").split()
                if len(words) >= 3:
                    assert " ".join(words) not in sources, f"held-out phrase {part!r} is in the front-end"


def test_every_variant_states_the_same_world_and_questions():
    base = rewordings.records("original")
    for variant in rewordings.VARIANTS:
        records = rewordings.records(variant)
        assert records["sh"]["answers"] == base["sh"]["answers"] and records["mh"]["answers"] == base["mh"]["answers"]
        assert len(records["sh"]["context"].splitlines()) == len(base["sh"]["context"].splitlines())
    mixed = rewordings.records("mixed")["sh"]["context"]
    assert " is the pet of " in mixed and "'s pet is " in mixed


def test_held_out_rewording_targets_as_reached(scores, needs_wordnet):
    got, rows = scores
    assert got[("original", "tepa", "sh")] >= 0.95                      # measured 1.00
    # old and new fact worded differently: merged keys let the newer fact override
    assert got[("mixed", "tepa", "mh")] >= rewordings.TARGETS["mixed MH"]   # target 0.60 met: 0.77
    assert got[("mixed", "tepa", "sh")] >= 0.73                          # target 0.90 missed: 0.76
    # object first: genitive frames take one canonical key, the possessor as the subject
    assert got[("object first", "tepa", "sh")] >= 0.73                   # target 0.85 missed: 0.74 (0.78 before
    #                                   the question reader re-read partial chains with definitions)
    assert got[("object first", "tepa", "mh")] >= 0.90                   # measured 0.95
    assert got[("questions reworded", "tepa", "sh")] >= 0.48             # target gap 0.05 missed: 0.51
    assert got[("paraphrased", "tepa", "sh")] >= 0.69                    # measured 0.70 (0.64 before
    #                                                      name words went back to the entities first)
    met = rewordings.targets(rows)
    assert set(met) == set(rewordings.TARGETS) and met["mixed MH"][2]


def test_design_and_held_out_rewordings_are_disjoint():
    """The extractor's rules were developed on benchmarks/facts_design_rewordings.py only:
    it shares no relation, entity kind or phrase of three words with the held-out set."""
    spec = importlib.util.spec_from_file_location("facts_design_rewordings",
                                                  ROOT / "benchmarks" / "facts_design_rewordings.py")
    design = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(design)
    assert not set(design.RELATIONS) & set(rewordings.RELATIONS)
    assert not (set(design.KINDS) - {"person"}) & set(rewordings.KINDS)

    def phrases(table):
        out = set()
        for _, _, forms, questions, nps in table.values():
            for text in (*forms.values(), *questions, *nps):
                words = re.sub(r"\{[sox]\}", "|", text.lower()).replace("'s", "").strip(" .?").split()
                out |= {" ".join(words[i:i + 3]) for i in range(len(words) - 2) if "|" not in words[i:i + 3]}
        return {p for p in out if p.split()[0] not in ("what", "who", "which", "where")}  # the wh- scaffold

    assert not phrases(design.RELATIONS) & phrases(rewordings.RELATIONS)
    held_nouns = {w for _, _, forms, _, _ in rewordings.RELATIONS.values()
                  for w in forms["genitive"].lower().split()[1:-4]}
    design_nouns = {w for _, _, forms, _, _ in design.RELATIONS.values()
                    for w in forms["genitive"].lower().split()[1:-4]}
    assert not held_nouns & design_nouns


def test_the_docs_hold_the_generated_rewording_table():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    holders = [p for p in pages if p.is_file() and "<!-- begin:fact-rewordings -->" in p.read_text(encoding="utf-8")]
    assert len(holders) == 1 and "| object first |" in holders[0].read_text(encoding="utf-8")
