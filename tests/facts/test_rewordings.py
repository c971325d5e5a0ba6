"""Held-out rewordings (issue 24): one relation in several surface forms, on relations the
extractor, the question reader and the generators never saw (benchmarks/fact_rewordings.py).

The issue's targets are mixed wording SH >= 0.90 and MH >= 0.60, object first SH >= 0.85,
and questions reworded within 0.05 of the original wording. They are not all reached: the
test asserts what is reached (the README's rewording table states every gap), so a
regression fails and an improvement shows in the generated table.
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
    assert got[("original", "tepa", "sh")] >= 0.9                       # measured 0.96
    # object first: genitive frames take one canonical key, the possessor as the subject
    assert got[("object first", "tepa", "sh")] >= 0.65                   # target 0.85, measured 0.71
    assert got[("object first", "tepa", "mh")] >= 0.65                   # measured 0.75
    # old and new fact worded differently: merged keys let the newer fact override
    assert got[("mixed", "tepa", "sh")] >= 0.55                          # target 0.90, measured 0.63
    assert got[("mixed", "tepa", "mh")] >= 0.40                          # target 0.60, measured 0.45
    assert got[("questions reworded", "tepa", "sh")] >= 0.35             # target 0.91, measured 0.39
    met = rewordings.targets(rows)
    assert set(met) == set(rewordings.TARGETS)


def test_the_docs_hold_the_generated_rewording_table():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    holders = [p for p in pages if p.is_file() and "<!-- begin:fact-rewordings -->" in p.read_text(encoding="utf-8")]
    assert len(holders) == 1 and "| object first |" in holders[0].read_text(encoding="utf-8")
