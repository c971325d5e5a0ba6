"""Held-out rewordings of FactConsolidation: one relation in several surface forms.

A paraphrase generator over relations that the extractor
(``tepa_envs/facts/extraction.py``), the question reader
(``agents/readers/questions.py``, ``lexicon.py``, ``wordnet.py``) and the shaped
generator (``tepa_envs/facts/shaped.py``, ``templates.py``) never saw: a pet, a
mentor, a rowing club, a boathouse, a tailor, a favourite dish, a ferry port and
an apprentice workshop, each written in several surface forms:

* ``plain``: subject first ("Dora Kest keeps a pet named Zubi."),
* ``synonym``: subject first in other words ("Dora Kest owns an animal called Zubi."),
* ``possessive``: "Dora Kest's pet is Zubi.",
* ``genitive``: "The pet of Dora Kest is Zubi.",
* ``object first``: "Zubi is the pet of Dora Kest.".

Variants of one record (the same world, the same facts, the same questions):

* ``original``: every fact ``plain``; questions in their first wording;
* ``questions reworded``: the same facts; questions in a second wording;
* ``paraphrased``: each (subject, relation) in one randomly chosen subject-first
  form, the same for its old and its new fact;
* ``mixed``: a relation's old and new fact in two different forms;
* ``object first``: every fact ``object first``.

Run ``python benchmarks/fact_rewordings.py`` to score every method of
:data:`METHODS` (question reader ``newest``: what is measured is the front-end's
keys) and write ``benchmarks/results/fact_rewordings.json`` and the block
``fact-rewordings`` (``--no-readme`` to leave the README alone). The test
``tests/facts/test_rewordings.py`` runs the same generator.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

# relation -> (subject kind, object kind, forms, (question 1, question 2), (noun phrase 1, noun phrase 2))
RELATIONS: dict[str, tuple[str, str, dict[str, str], tuple[str, str], tuple[str, str]]] = {
    "pet": ("person", "pet", {
        "plain": "{s} keeps a pet named {o}.", "synonym": "{s} owns an animal called {o}.",
        "possessive": "{s}'s pet is {o}.", "genitive": "The pet of {s} is {o}.",
        "object first": "{o} is the pet of {s}."},
        ("What is the name of the pet of {s}?", "Which animal does {s} own?"),
        ("the pet of {x}", "the animal owned by {x}")),
    "mentor": ("person", "person", {
        "plain": "{s} was mentored by {o}.", "synonym": "{s} was coached by {o}.",
        "possessive": "{s}'s mentor is {o}.", "genitive": "The mentor of {s} is {o}.",
        "object first": "{o} is the mentor of {s}."},
        ("Who mentored {s}?", "Who is the coach of {s}?"),
        ("the mentor of {x}", "the coach of {x}")),
    "rowing": ("person", "club", {
        "plain": "{s} rows for the club {o}.", "synonym": "{s} is an oarsman of the club {o}.",
        "possessive": "{s}'s rowing club is {o}.", "genitive": "The rowing club of {s} is {o}.",
        "object first": "{o} is the rowing club of {s}."},
        ("Which club does {s} row for?", "What is the rowing club of {s}?"),
        ("the rowing club of {x}", "the club {x} rows for")),
    "boathouse": ("club", "river", {
        "plain": "{s} keeps its boats on the river {o}.", "synonym": "{s} stores its boats on the river {o}.",
        "possessive": "{s}'s home river is {o}.", "genitive": "The home river of {s} is {o}.",
        "object first": "{o} is the home river of {s}."},
        ("On which river does {s} keep its boats?", "What is the home river of {s}?"),
        ("the home river of {x}", "the river where {x} stores its boats")),
    "tailor": ("person", "person", {
        "plain": "{s} has suits made by {o}.", "synonym": "{s} has clothes sewn by {o}.",
        "possessive": "{s}'s tailor is {o}.", "genitive": "The tailor of {s} is {o}.",
        "object first": "{o} is the tailor of {s}."},
        ("Who makes suits for {s}?", "Who is the tailor of {s}?"),
        ("the tailor of {x}", "the person who sews clothes for {x}")),
    "dish": ("person", "dish", {
        "plain": "{s} likes to eat {o}.", "synonym": "{s} enjoys eating {o}.",
        "possessive": "{s}'s favourite dish is {o}.", "genitive": "The favourite dish of {s} is {o}.",
        "object first": "{o} is the favourite dish of {s}."},
        ("What does {s} like to eat?", "What is the favourite dish of {s}?"),
        ("the favourite dish of {x}", "the food {x} enjoys eating")),
    "ferry": ("river", "port", {
        "plain": "{s} is crossed by a ferry at {o}.", "synonym": "{s} is traversed by a ferry at {o}.",
        "possessive": "{s}'s ferry port is {o}.", "genitive": "The ferry port of {s} is {o}.",
        "object first": "{o} is the ferry port of {s}."},
        ("Where is {s} crossed by a ferry?", "What is the ferry port of {s}?"),
        ("the ferry port of {x}", "the port where a ferry crosses {x}")),
    "apprentice": ("person", "person", {
        "plain": "{s} trained the apprentice {o}.", "synonym": "{s} taught the apprentice {o}.",
        "possessive": "{s}'s apprentice is {o}.", "genitive": "The apprentice of {s} is {o}.",
        "object first": "{o} is the apprentice of {s}."},
        ("Which apprentice did {s} train?", "Who is the apprentice of {s}?"),
        ("the apprentice of {x}", "the apprentice taught by {x}")),
}
SUBJECT_FIRST = ("plain", "synonym", "possessive", "genitive")
VARIANTS = ("original", "questions reworded", "paraphrased", "mixed", "object first")
METHODS = ("tepa", "lww", "append-only", "temporal-recency", "tepa-norev")
CHAINS: tuple[tuple[str, ...], ...] = (
    ("mentor", "pet"), ("rowing", "boathouse"), ("rowing", "boathouse", "ferry"), ("mentor", "tailor"),
    ("tailor", "dish"), ("apprentice", "rowing"), ("mentor", "apprentice", "dish"), ("boathouse", "ferry"),
    ("apprentice", "tailor", "pet"), ("mentor", "rowing", "boathouse"))
TARGETS = {"mixed SH": 0.90, "mixed MH": 0.60, "object first SH": 0.85, "questions reworded gap": 0.05}
"""The issue's targets: SH/MH with mixed wording, SH object first, and the largest drop
from ``original`` when only the questions are reworded."""

_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def _names(rng: np.random.Generator, n: int, pattern: str, used: set[str]) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        parts = rng.choice(len(_SYLLABLES), size=4)
        a = "".join(_SYLLABLES[i] for i in parts[:2]).capitalize()
        b = "".join(_SYLLABLES[i] for i in parts[2:]).capitalize()
        name = pattern.format(a=a, b=b)
        if name not in used:
            used.add(name)
            names.append(name)
    return names


KINDS: dict[str, str | tuple[str, ...]] = {
    "person": "{a} {b}", "club": "{a} Rowing Club", "river": "{a} Water", "port": "Port {a}", "pet": "{a}",
    "dish": ("lentil stew", "fish pie", "barley soup", "onion tart", "bean curry", "plum dumplings",
             "rye pancakes", "cabbage rolls")}
"""Entity kinds: a name pattern (``{a}``/``{b}`` random words) or a fixed list."""
SIZES = {"person": 30, "pet": 20}
"""Names per patterned kind (others: 8)."""


def world(seed: int = 0, n_people: int = 30, override_share: float = 0.5,
          relations: dict | None = None, kinds: dict | None = None) -> dict[str, Any]:
    """Entities, every (subject, relation)'s values (old first) and the fact order."""
    relations = RELATIONS if relations is None else relations
    kinds = KINDS if kinds is None else kinds
    rng = np.random.default_rng(seed)
    used: set[str] = set()
    entities: dict[str, list[str]] = {}
    for kind, pattern in kinds.items():
        size = n_people if kind == "person" else SIZES.get(kind, 8)
        entities[kind] = _names(rng, size, pattern, used) if isinstance(pattern, str) else list(pattern)
    history: dict[tuple[str, str], list[str]] = {}
    for relation, (s_kind, o_kind, *_rest) in relations.items():
        for subject in entities[s_kind]:
            pool = [o for o in entities[o_kind] if o != subject]
            values = [pool[int(rng.integers(len(pool)))]]
            if rng.random() < override_share:
                values.append(next(o for o in rng.permutation(pool).tolist() if o != values[0]))
            history[(subject, relation)] = values
    keys = list(history)
    order = [(keys[i], 0) for i in rng.permutation(len(keys)).tolist()]
    order += [(keys[i], 1) for i in rng.permutation(len(keys)).tolist() if len(history[keys[i]]) > 1]
    return {"entities": entities, "history": history, "order": order, "keys": keys}


def _noun_phrase(chain: tuple[str, ...], anchor: str, wording: int, relations: dict) -> str:
    text = anchor
    for relation in chain:
        text = relations[relation][4][wording].format(x=text)
    return text


def records(variant: str, seed: int = 0, n_sh: int = 100, n_mh: int = 60, relations: dict | None = None,
            chains: tuple[tuple[str, ...], ...] | None = None, kinds: dict | None = None
            ) -> dict[str, dict[str, Any]]:
    """``{"sh": record, "mh": record}`` of ``variant`` in MemoryAgentBench's schema (by
    default over the held-out :data:`RELATIONS`, :data:`CHAINS` and :data:`KINDS`)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; valid: {', '.join(VARIANTS)}")
    relations = RELATIONS if relations is None else relations
    chains = CHAINS if chains is None else chains
    w = world(seed, relations=relations, kinds=kinds)
    history, entities = w["history"], w["entities"]
    rng = np.random.default_rng([seed, VARIANTS.index(variant)])
    forms: dict[tuple[str, str], tuple[str, str]] = {}
    for key in w["keys"]:
        if variant in ("original", "questions reworded"):
            forms[key] = ("plain", "plain")
        elif variant == "object first":
            forms[key] = ("object first", "object first")
        elif variant == "paraphrased":
            form = SUBJECT_FIRST[int(rng.integers(len(SUBJECT_FIRST)))]
            forms[key] = (form, form)
        else:  # mixed: the old and the new fact in two different forms (object first among them)
            pool = SUBJECT_FIRST + ("object first",)
            a, b = rng.choice(len(pool), size=2, replace=False)
            forms[key] = (pool[int(a)], pool[int(b)])
    lines = ["Here is a list of facts:"]
    for n, (key, version) in enumerate(w["order"]):
        subject, relation = key
        lines.append(f"{n}. " + relations[relation][2][forms[key][version]].format(s=subject,
                                                                                  o=history[key][version]))
    newest = {key: values[-1] for key, values in history.items()}
    wording = 1 if variant == "questions reworded" else 0
    qrng = np.random.default_rng([seed, 99])   # the same questions in every variant
    sh_keys = [w["keys"][i] for i in qrng.permutation(len(w["keys"]))[:n_sh].tolist()]
    sh = [(relations[rel][3][wording].format(s=subject), newest[(subject, rel)]) for subject, rel in sh_keys]
    mh = []
    for i in range(n_mh):
        chain = chains[i % len(chains)]
        kind = relations[chain[0]][0]
        anchor = entities[kind][int(qrng.integers(len(entities[kind])))]
        value = anchor
        for rel in chain:
            value = newest[(value, rel)]
        mh.append((f"What is {_noun_phrase(chain, anchor, wording, relations)}?", value))

    def record(split: str, qa: list[tuple[str, str]]) -> dict[str, Any]:
        source = f"factconsolidation_{split}_6k"
        return {"context": "\n".join(lines), "questions": [q for q, _ in qa], "answers": [[a] for _, a in qa],
                "metadata": {"source": source, "qa_pair_ids": [f"{source}_no{i}" for i in range(len(qa))]}}

    return {"sh": record("sh", sh), "mh": record("mh", mh)}


def score(variants=VARIANTS, methods=METHODS, seed: int = 0, reader: str = "newest",
          **tables: Any) -> list[dict[str, Any]]:
    """Rows ``{variant, method, split, score, n}`` (``tables``: ``relations``, ``chains``,
    ``kinds`` of :func:`records`, by default the held-out ones)."""
    import gymnasium as gym

    import tepa_envs  # noqa: F401  (registers the environments)
    from tepa_envs.agents.evaluation.studies.facts import score_method

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for variant in variants:
            for split, record in records(variant, seed, **tables).items():
                path = Path(folder) / f"{variant.replace(' ', '_')}_{split}.json"
                path.write_text(json.dumps([record]))
                env = gym.make("TEPA/FactConsolidation-v0", split=split, length="6k", data_path=str(path))
                try:
                    for method in methods:
                        value, n = score_method(env, method, seed, reader)
                        rows.append({"variant": variant, "method": method, "split": split, "score": value, "n": n})
                finally:
                    env.close()
    return rows


def targets(rows: list[dict[str, Any]], method: str = "tepa") -> dict[str, tuple[float, float, bool]]:
    """Per target: (measured, target, met)."""
    got = {(r["variant"], r["split"]): r["score"] for r in rows if r["method"] == method}
    gap = max(got[("original", s)] - got[("questions reworded", s)] for s in ("sh", "mh"))
    measured = {"mixed SH": got[("mixed", "sh")], "mixed MH": got[("mixed", "mh")],
                "object first SH": got[("object first", "sh")], "questions reworded gap": gap}
    return {name: (value, TARGETS[name], value <= TARGETS[name] if name.endswith("gap") else value >= TARGETS[name])
            for name, value in measured.items()}


def markdown(rows: list[dict[str, Any]]) -> str:
    methods = list(dict.fromkeys(r["method"] for r in rows))
    got = {(r["variant"], r["method"], r["split"]): r["score"] for r in rows}
    lines = ["| variant | " + " | ".join(f"{m} SH / MH" for m in methods) + " |",
             "|---|" + "---|" * len(methods)]
    for variant in dict.fromkeys(r["variant"] for r in rows):
        lines.append(f"| {variant} | " + " | ".join(
            f"{got[(variant, m, 'sh')]:.2f} / {got[(variant, m, 'mh')]:.2f}" for m in methods) + " |")
    lines.append("")
    lines.append("Targets (TEPA): " + "; ".join(
        f"{name} {value:.2f} ({'≤' if name.endswith('gap') else '≥'} {target:.2f}: {'met' if met else 'missed'})"
        for name, (value, target, met) in targets(rows).items()) + ".")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fact_rewordings.json"))
    parser.add_argument("--no-readme", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = score()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "targets": targets(rows)}, indent=1) + "\n")
    table = markdown(rows)
    print(table)
    if not args.no_readme:
        sys.path.insert(0, str(ROOT))
        from tepa_envs.agents.evaluation.outputs.blocks import write_blocks

        write_blocks({"fact-rewordings": table}, ROOT)
    print(f"{time.perf_counter() - started:.1f} s; wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
