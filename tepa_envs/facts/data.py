"""Offline generator of MemoryAgentBench-style FactConsolidation records.

One *world* per length and seed: typed entities (people, cities, countries,
organizations, works, languages) joined by 16 relations. Every
``subject|relation`` key has an original fact; some keys get a counterfactual
override (occasionally two) that appears later in the numbered list, with a
wide gap. The numbered facts form one context shared by two splits:

* ``sh``: 100 single-hop questions, each about an overridden key;
* ``mh``: 100 multi-hop questions, chains of 2 to 4 hops (mean about 2.6)
  following the newest fact at every hop, with at least one overridden hop.

Records follow MemoryAgentBench's schema::

    {"context": "Here is a list of facts:\\n0. <fact>\\n1. <fact>...",
     "questions": [...100], "answers": [[alias, ...], ...],
     "metadata": {"source": "factconsolidation_sh_6k",
                  "qa_pair_ids": ["factconsolidation_sh_6k_no0", ...]}}

Names are composed from consonant-vowel syllables, so a name's short form can
never occur inside another entity's name: substring matching cannot credit a
wrong entity. Everything is drawn from a numpy ``Generator`` seeded by
``(seed, length)``, identical in every process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tepa_envs.core.checks import check_choice, check_int

LENGTHS: dict[str, int] = {"6k": 455, "32k": 2310, "64k": 4580, "262k": 18332}
SPLITS: tuple[str, ...] = ("sh", "mh")
N_QUESTIONS = 100
HEADER = "Here is a list of facts:"
OVERRIDE_SHARE = 0.4          # keys with at least one override (of all keys)
SECOND_OVERRIDE_SHARE = 0.15  # overridden keys overridden a second time
HOP_COUNTS, HOP_PROBS = (2, 3, 4), (0.5, 0.4, 0.1)


@dataclass(frozen=True, slots=True)
class Relation:
    """A typed relation and its three surface forms (``{s}`` subject, ``{o}`` object)."""

    name: str
    subject_type: str
    object_type: str
    fact: str
    question: str
    phrase: str


RELATIONS: tuple[Relation, ...] = (
    Relation("born_in", "person", "city", "{s} was born in the city of {o}.",
             "Which city was {s} born in?", "the city where {s} was born"),
    Relation("died_in", "person", "city", "{s} passed away in the city of {o}.",
             "In which city did {s} pass away?", "the city where {s} passed away"),
    Relation("citizen_of", "person", "country", "{s} is a citizen of {o}.",
             "Which country is {s} a citizen of?", "the country of citizenship of {s}"),
    Relation("spouse", "person", "person", "{s} is married to {o}.",
             "Who is {s} married to?", "the spouse of {s}"),
    Relation("famous_for", "person", "work", "{s} is famous for {o}.",
             "What is {s} famous for?", "the work {s} is famous for"),
    Relation("employer", "person", "organization", "{s} is employed by {o}.",
             "Who is {s} employed by?", "the employer of {s}"),
    Relation("capital", "country", "city", "The capital of {s} is {o}.",
             "What is the capital of {s}?", "the capital of {s}"),
    Relation("head_of_state", "country", "person", "The head of state of {s} is {o}.",
             "Who is the head of state of {s}?", "the head of state of {s}"),
    Relation("official_language", "country", "language", "The official language of {s} is {o}.",
             "What is the official language of {s}?", "the official language of {s}"),
    Relation("located_in", "city", "country", "{s} is located in the country of {o}.",
             "Which country is {s} located in?", "the country where {s} is located"),
    Relation("mayor", "city", "person", "The mayor of {s} is {o}.",
             "Who is the mayor of {s}?", "the mayor of {s}"),
    Relation("chairperson", "organization", "person", "The chairperson of {s} is {o}.",
             "Who is the chairperson of {s}?", "the chairperson of {s}"),
    Relation("headquarters", "organization", "city", "The headquarters of {s} are in the city of {o}.",
             "In which city are the headquarters of {s}?", "the city hosting the headquarters of {s}"),
    Relation("founder", "organization", "person", "{s} was founded by {o}.",
             "Who founded {s}?", "the founder of {s}"),
    Relation("author", "work", "person", "The author of {s} is {o}.",
             "Who is the author of {s}?", "the author of {s}"),
    Relation("publisher", "work", "organization", "{s} was published by {o}.",
             "Which organization published {s}?", "the publisher of {s}"),
)
RELATION_BY_NAME: dict[str, Relation] = {r.name: r for r in RELATIONS}

# Share of entities per type; languages only ever appear as objects.
TYPE_SHARES: dict[str, float] = {"person": 0.35, "city": 0.2, "country": 0.08,
                                 "organization": 0.14, "work": 0.15, "language": 0.08}
_RELATIONS_OF: dict[str, tuple[int, ...]] = {
    t: tuple(i for i, r in enumerate(RELATIONS) if r.subject_type == t) for t in TYPE_SHARES}

CONSONANTS, VOWELS = "bdfgklmnprstvz", "aeiou"
SYLLABLES: tuple[str, ...] = tuple(c + v for c in CONSONANTS for v in VOWELS)
# Name forms per type: (template, probability). {S} is the unique stem, {G}/{H} given names.
NAME_FORMS: dict[str, tuple[tuple[str, float], ...]] = {
    "person": (("{G} {S}", 0.65), ("{G} {H} {S}", 0.35)),
    "city": (("{S}", 0.6), ("Port {S}", 0.2), ("{S} Falls", 0.2)),
    "country": (("{S}", 0.5), ("Republic of {S}", 0.3), ("Kingdom of {S}", 0.2)),
    "organization": (("{S} Corporation", 0.3), ("{S} Institute", 0.2), ("{S} University", 0.2),
                     ("{S} Records", 0.15), ("{S} Steel Group", 0.15)),
    "work": (("The {S} Chronicles", 0.35), ("{S}", 0.25), ("Songs of {S}", 0.2),
             ("The {S} Variations", 0.2)),
    "language": (("{S}", 1.0),),
}
_FIXED_WORDS = " ".join(w for forms in NAME_FORMS.values() for f, _ in forms for w in f.split()
                        if not w.startswith("{")).lower()
# A stem inside a fixed word could match a wrong entity by substring; such stems are never drawn.
_BANNED_STEMS = frozenset(_FIXED_WORDS[i:i + 6] for i in range(len(_FIXED_WORDS) - 5))


@dataclass(frozen=True, slots=True)
class Entity:
    name: str
    type: str
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FactWorld:
    """The hidden world behind one length's records (for tests and inspection)."""

    length: str
    seed: int
    entities: tuple[Entity, ...]
    facts: tuple[tuple[int, int, int], ...]          # (serial, key index, value entity) by serial
    keys: tuple[tuple[int, int], ...]                 # (subject entity, relation index)
    sh_keys: tuple[int, ...]                          # key index per SH question
    mh_chains: tuple[tuple[int, ...], ...]           # key indices per MH question

    def key_name(self, k: int) -> str:
        subject, relation = self.keys[k]
        return f"{self.entities[subject].name}|{RELATIONS[relation].name}"


def check_length(length: object) -> str:
    return check_choice("length", length, LENGTHS)  # type: ignore[return-value]


def check_split(split: object) -> str:
    return check_choice("split", split, SPLITS)  # type: ignore[return-value]


def check_seed(seed: object) -> int:
    return check_int("seed", seed, low=0)  # type: ignore[arg-type]


def source_name(split: str, length: str) -> str:
    return f"factconsolidation_{split}_{length}"


# ------------------------------------------------------------------ entities
def _draw_stems(rng: np.random.Generator, n: int) -> list[str]:
    total = len(SYLLABLES) ** 3
    picks = rng.choice(total, size=min(total, n + n // 8 + 64), replace=False)
    stems: list[str] = []
    s = len(SYLLABLES)
    for p in picks.tolist():
        stem = SYLLABLES[p // (s * s)] + SYLLABLES[(p // s) % s] + SYLLABLES[p % s]
        if stem not in _BANNED_STEMS:
            stems.append(stem.capitalize())
            if len(stems) == n:
                return stems
    raise ValueError(f"cannot draw {n} distinct entity names")


def _draw_entities(rng: np.random.Generator, counts: dict[str, int]) -> list[Entity]:
    total = sum(counts.values())
    stems = _draw_stems(rng, total)
    givens = rng.integers(0, len(SYLLABLES), size=(total, 4))
    form_draws = rng.random(total)
    entities: list[Entity] = []
    i = 0
    for entity_type, count in counts.items():
        forms = NAME_FORMS[entity_type]
        cumulative = np.cumsum([p for _, p in forms])
        for _ in range(count):
            form = forms[min(int(np.searchsorted(cumulative, form_draws[i], side="right")), len(forms) - 1)][0]
            g = [SYLLABLES[j] for j in givens[i].tolist()]
            given, second = (g[0] + g[1]).capitalize(), (g[2] + g[3]).capitalize()
            name = form.format(S=stems[i], G=given, H=second)
            aliases = [name]
            if entity_type == "person" and "{H}" in form:
                aliases.append(f"{given} {stems[i]}")
            aliases.append(stems[i])
            if entity_type == "language":
                aliases.append(f"{stems[i]} language")
            entities.append(Entity(name, entity_type, tuple(dict.fromkeys(aliases))))
            i += 1
    return entities


# --------------------------------------------------------------------- world
def _fact_budget(n_facts: int) -> tuple[int, int, int]:
    """(keys, overridden keys, keys overridden twice) that add up to ``n_facts`` facts."""
    n_over = round(n_facts * OVERRIDE_SHARE / (1 + OVERRIDE_SHARE * (1 + SECOND_OVERRIDE_SHARE)))
    n_second = round(n_over * SECOND_OVERRIDE_SHARE)
    return n_facts - n_over - n_second, n_over, n_second


def generate_world(length: str = "6k", seed: int = 0) -> FactWorld:
    """Draw the world of ``length`` from ``seed`` (deterministic in every process)."""
    check_length(length)
    seed = check_seed(seed)
    rng = np.random.default_rng([seed, list(LENGTHS).index(length)])
    n_facts = LENGTHS[length]
    n_keys, n_over, n_second = _fact_budget(n_facts)
    per_entity = sum(TYPE_SHARES[t] * len(_RELATIONS_OF[t]) for t in TYPE_SHARES)
    n_entities = int(np.ceil(1.6 * n_keys / per_entity))
    counts = {t: max(3, int(round(share * n_entities))) for t, share in TYPE_SHARES.items()}
    entities = _draw_entities(rng, counts)
    by_type: dict[str, np.ndarray] = {
        t: np.array([i for i, e in enumerate(entities) if e.type == t], dtype=np.int64) for t in TYPE_SHARES}

    candidates = [(e, r) for e, entity in enumerate(entities) for r in _RELATIONS_OF[entity.type]]
    order = rng.permutation(len(candidates))[:n_keys]
    keys = [candidates[i] for i in sorted(order.tolist())]

    history: list[list[int]] = []  # values of each key, oldest first
    for subject, relation in keys:
        pool = by_type[RELATIONS[relation].object_type]
        value = int(pool[rng.integers(len(pool))])
        while value == subject:
            value = int(pool[rng.integers(len(pool))])
        history.append([value])
    overridden = rng.choice(n_keys, size=n_over, replace=False)
    twice = set(overridden[:n_second].tolist())
    for k in overridden.tolist():
        for _ in range(2 if k in twice else 1):
            pool = by_type[RELATIONS[keys[k][1]].object_type]
            value = int(pool[rng.integers(len(pool))])
            while value in history[k] or value == keys[k][0]:
                value = int(pool[rng.integers(len(pool))])
            history[k].append(value)

    facts = _order_facts(rng, history)
    newest = [h[-1] for h in history]
    sh_keys = tuple(int(k) for k in rng.choice(np.sort(overridden), size=N_QUESTIONS, replace=False))
    chains = _draw_chains(rng, keys, newest, [len(h) > 1 for h in history])
    return FactWorld(length, seed, tuple(entities), facts, tuple(keys), sh_keys, chains)


def _order_facts(rng: np.random.Generator, history: list[list[int]]) -> tuple[tuple[int, int, int], ...]:
    """Serial numbers: an override lands well after (in time drawn at least 0.2 of the
    list later than) the fact it overrides."""
    times: list[float] = []
    items: list[tuple[int, int]] = []
    for k, values in enumerate(history):
        if len(values) == 1:
            times.append(float(rng.random()))
        elif len(values) == 2:
            u = float(rng.uniform(0.0, 0.6))
            times.extend((u, float(rng.uniform(u + 0.25, 1.0))))
        else:
            u = float(rng.uniform(0.0, 0.3))
            v = float(rng.uniform(u + 0.25, 0.75))
            times.extend((u, v, float(rng.uniform(v + 0.2, 1.0))))
        items.extend((k, v) for v in values)
    order = np.argsort(np.array(times), kind="stable")
    return tuple((serial, items[i][0], items[i][1]) for serial, i in enumerate(order.tolist()))


def _draw_chains(rng: np.random.Generator, keys: list[tuple[int, int]], newest: list[int],
                 overridden: list[bool]) -> tuple[tuple[int, ...], ...]:
    """Random walks over the newest facts: 2-4 hops, at least one overridden, no entity twice."""
    outgoing: dict[int, list[int]] = {}
    for k, (subject, _) in enumerate(keys):
        outgoing.setdefault(subject, []).append(k)
    spouse = RELATION_BY_NAME["spouse"]
    spouse_index = RELATIONS.index(spouse)
    chains: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    for _ in range(1000 * N_QUESTIONS):
        hops = int(rng.choice(HOP_COUNTS, p=HOP_PROBS))
        path = [int(rng.integers(len(keys)))]
        visited = {keys[path[0]][0], newest[path[0]]}
        while len(path) < hops:
            options = [k for k in outgoing.get(newest[path[-1]], ())
                       if newest[k] not in visited
                       and not (keys[k][1] == spouse_index and keys[path[-1]][1] == spouse_index)]
            if not options:
                break
            path.append(options[int(rng.integers(len(options)))])
            visited.add(newest[path[-1]])
        chain = tuple(path)
        if len(chain) < hops or chain in seen or not any(overridden[k] for k in chain):
            continue
        seen.add(chain)
        chains.append(chain)
        if len(chains) == N_QUESTIONS:
            return tuple(chains)
    raise RuntimeError(f"could not draw {N_QUESTIONS} multi-hop chains from {len(keys)} keys")


# ------------------------------------------------------------------- records
def question_text(world: FactWorld, chain: tuple[int, ...]) -> str:
    """The question for a chain of keys: inner hops as nested noun phrases."""
    subject = world.entities[world.keys[chain[0]][0]].name
    for k in chain[:-1]:
        subject = RELATIONS[world.keys[k][1]].phrase.format(s=subject)
    return RELATIONS[world.keys[chain[-1]][1]].question.format(s=subject)


def context_text(world: FactWorld) -> str:
    lines = [HEADER]
    for serial, k, value in world.facts:
        subject, relation = world.keys[k]
        fact = RELATIONS[relation].fact.format(s=world.entities[subject].name, o=world.entities[value].name)
        lines.append(f"{serial}. {fact}")
    return "\n".join(lines)


def world_records(world: FactWorld) -> dict[str, dict]:
    """The ``sh`` and ``mh`` records of a world (one shared context)."""
    context = context_text(world)
    newest: dict[int, int] = {}
    for _, k, value in world.facts:
        newest[k] = value
    records = {}
    for split, chains in (("sh", tuple((k,) for k in world.sh_keys)), ("mh", world.mh_chains)):
        source = source_name(split, world.length)
        records[split] = {
            "context": context,
            "questions": [question_text(world, chain) for chain in chains],
            "answers": [list(world.entities[newest[chain[-1]]].aliases) for chain in chains],
            "metadata": {"source": source,
                         "qa_pair_ids": [f"{source}_no{i}" for i in range(len(chains))]},
        }
    return records


def generate_records(length: str = "6k", seed: int = 0) -> dict[str, dict]:
    """Both splits of one length, ``{"sh": record, "mh": record}``, sharing one context."""
    return world_records(generate_world(length, seed))
