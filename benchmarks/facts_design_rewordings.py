"""Design rewordings of FactConsolidation: the set the front-end's rules were developed on.

The held-out rewordings (``benchmarks/fact_rewordings.py``) must stay unseen by
whoever writes the extractor's rules, so the rules of
``tepa_envs/facts/extraction.py`` (genitive and object-first shapes, apposition
and agent nouns, merging one relation's frames) were developed and debugged on
*this* set only: the same surface forms (plain, synonym, possessive, genitive,
object first) and the same variants, over other relations (a neighbour, a choir,
a rehearsal hall, a landlord, a bicycle maker, a role model, an architect, a
first summit, a usual drink) with other entity kinds. The held-out set was run
only to report it. ``tests/facts/test_rewordings.py`` checks that the two sets
share no relation noun and no phrase of three words.

Run ``python benchmarks/facts_design_rewordings.py`` to print the table (nothing
is written: it is not a published number).
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("fact_rewordings", ROOT / "benchmarks" / "fact_rewordings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# relation -> (subject kind, object kind, forms, (question 1, question 2), (noun phrase 1, noun phrase 2))
RELATIONS: dict[str, tuple[str, str, dict[str, str], tuple[str, str], tuple[str, str]]] = {
    "neighbour": ("person", "person", {
        "plain": "{s} lives next door to {o}.", "synonym": "{s} lives beside {o}.",
        "possessive": "{s}'s neighbour is {o}.", "genitive": "The neighbour of {s} is {o}.",
        "object first": "{o} is the neighbour of {s}."},
        ("Who lives next door to {s}?", "Who is the neighbour of {s}?"),
        ("the neighbour of {x}", "the person living beside {x}")),
    "choir": ("person", "choir", {
        "plain": "{s} sings in the choir {o}.", "synonym": "{s} is a chorister in {o}.",
        "possessive": "{s}'s choir is {o}.", "genitive": "The choir of {s} is {o}.",
        "object first": "{o} is the choir of {s}."},
        ("In which choir does {s} sing?", "What is the choir of {s}?"),
        ("the choir of {x}", "the choir {x} sings in")),
    "hall": ("choir", "hall", {
        "plain": "{s} rehearses in the hall {o}.", "synonym": "{s} practises at the venue {o}.",
        "possessive": "{s}'s rehearsal hall is {o}.", "genitive": "The rehearsal hall of {s} is {o}.",
        "object first": "{o} is the rehearsal hall of {s}."},
        ("Where does {s} rehearse?", "What is the rehearsal hall of {s}?"),
        ("the rehearsal hall of {x}", "the hall where {x} rehearses")),
    "landlord": ("person", "person", {
        "plain": "{s} rents a flat from {o}.", "synonym": "{s} leases rooms from {o}.",
        "possessive": "{s}'s landlord is {o}.", "genitive": "The landlord of {s} is {o}.",
        "object first": "{o} is the landlord of {s}."},
        ("From whom does {s} rent a flat?", "Who is the landlord of {s}?"),
        ("the landlord of {x}", "the person {x} rents from")),
    "bicycle": ("person", "maker", {
        "plain": "{s} rides a bicycle built by {o}.", "synonym": "{s} cycles on a bike made by {o}.",
        "possessive": "{s}'s bicycle maker is {o}.", "genitive": "The bicycle maker of {s} is {o}.",
        "object first": "{o} is the bicycle maker of {s}."},
        ("Who built the bicycle {s} rides?", "What is the bicycle maker of {s}?"),
        ("the bicycle maker of {x}", "the firm that built the bike of {x}")),
    "role model": ("person", "person", {
        "plain": "{s} looks up to {o}.", "synonym": "{s} idolises {o}.",
        "possessive": "{s}'s role model is {o}.", "genitive": "The role model of {s} is {o}.",
        "object first": "{o} is the role model of {s}."},
        ("Who does {s} look up to?", "Who is the role model of {s}?"),
        ("the role model of {x}", "the idol of {x}")),
    "architect": ("hall", "person", {
        "plain": "{s} was designed by {o}.", "synonym": "{s} was drawn up by {o}.",
        "possessive": "{s}'s architect is {o}.", "genitive": "The architect of {s} is {o}.",
        "object first": "{o} is the architect of {s}."},
        ("Who designed {s}?", "Who is the architect of {s}?"),
        ("the architect of {x}", "the designer of {x}")),
    "summit": ("person", "mountain", {
        "plain": "{s} first climbed the mountain {o}.", "synonym": "{s} first ascended the peak {o}.",
        "possessive": "{s}'s first summit is {o}.", "genitive": "The first summit of {s} is {o}.",
        "object first": "{o} is the first summit of {s}."},
        ("Which mountain did {s} climb first?", "What is the first summit of {s}?"),
        ("the first summit of {x}", "the first mountain {x} climbed")),
    "drink": ("person", "drink", {
        "plain": "{s} usually drinks {o}.", "synonym": "{s} normally orders {o}.",
        "possessive": "{s}'s usual drink is {o}.", "genitive": "The usual drink of {s} is {o}.",
        "object first": "{o} is the usual drink of {s}."},
        ("What does {s} usually drink?", "What is the usual drink of {s}?"),
        ("the usual drink of {x}", "the drink {x} normally orders")),
}
KINDS: dict[str, str | tuple[str, ...]] = {
    "person": "{a} {b}", "choir": "{a} Choir", "hall": "{a} Hall", "maker": "{a} Cycles",
    "mountain": "Mount {a}",
    "drink": ("mint tea", "black coffee", "apple juice", "ginger beer", "oat milk", "lemonade", "cocoa",
              "sparkling water")}
CHAINS: tuple[tuple[str, ...], ...] = (
    ("neighbour", "choir"), ("choir", "hall", "architect"), ("landlord", "bicycle"), ("role model", "drink"),
    ("neighbour", "landlord", "summit"), ("hall", "architect"), ("architect", "role model"),
    ("role model", "neighbour", "drink"), ("landlord", "choir", "hall"), ("neighbour", "summit"))


def score(**kwargs: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = _generator().score(relations=RELATIONS, chains=CHAINS, kinds=KINDS, **kwargs)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="tepa,append-only")
    args = parser.parse_args(argv)
    gen = _generator()
    rows = score(seed=args.seed, methods=tuple(args.methods.split(",")))
    print(gen.markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
