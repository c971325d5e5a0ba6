"""A FactConsolidation generator with the episode shape of MemoryAgentBench's rows.

The *shape* is measured on the official 6k rows and reproduced here; the
*wording* is not taken from them: relations and sentence forms come from the
general pool of :mod:`tepa_envs.facts.templates` (Wikidata properties stated in
the general English forms: genitive, possessive, object first, and the
relation's verb), questions from the same schemas.

* One surface form per relation per record, drawn from the relation's forms
  (as in the official rows, where a relation's old and new facts are worded
  alike); every relation equally likely;
* about 55 % of the keys overridden once, the newer fact anywhere after the
  older one (median gap about a third of the list);
* multi-hop questions are chains of 2 to 4 hops (shares 0.6 / 0.3 / 0.1) that
  follow the newest fact at every hop, each with at least one overridden
  hop, asked as questions around nested noun phrases; most of the record's
  facts lie on some chain (as in MQuAKE, where the facts come from the
  chains), the rest are drawn at random to reach the length;
* single-hop questions: 74 % about overridden keys, 26 % about keys never
  overridden (the official SH-6k row's shares).

Entity names follow several patterns per kind (see
:data:`~tepa_envs.facts.templates.NAME_PATTERNS`), each around a stem of six
letters that occurs in no other name (checked as each name is drawn), so
substring matching never credits a wrong entity. Records follow
MemoryAgentBench's schema; everything is drawn from one
``random.Random("shaped-<seed>-<length>")`` (string seeds are hashed the same
way in every process).
"""

from __future__ import annotations

import random
from collections.abc import Set as AbstractSet

from tepa_envs.facts.data import HEADER, LENGTHS, N_QUESTIONS, check_length, check_seed, source_name
from tepa_envs.facts.templates import NAME_PATTERNS, SHAPED_RELATIONS

OVERRIDE_SHARE = 0.55
NEVER_OVERRIDDEN_SH = 0.26
HOPS, HOP_PROBS = (2, 3, 4), (0.6, 0.3, 0.1)
REUSE = 0.3  # chance a chain's next entity is one the world already has

_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"
_SYLLABLES = tuple(c + v for c in _CONSONANTS for v in _VOWELS)
_STEM_LETTERS = 6  # three syllables
_BY_SUBJECT: dict[str, tuple[int, ...]] = {}
for _i, _rel in enumerate(SHAPED_RELATIONS):
    _BY_SUBJECT[_rel.subject] = _BY_SUBJECT.get(_rel.subject, ()) + (_i,)


def _rng(length: str, seed: int) -> random.Random:
    check_length(length)
    return random.Random(f"shaped-{check_seed(seed)}-{length}")


def _forms(rng: random.Random) -> tuple[str, ...]:
    """One surface form per relation for a whole record (the record's first draws)."""
    return tuple(rng.choice(rel.facts) for rel in SHAPED_RELATIONS)


def record_forms(length: str = "6k", seed: int = 0) -> tuple[str, ...]:
    """The fact form each relation of :data:`~tepa_envs.facts.templates.SHAPED_RELATIONS`
    takes in the record :func:`generate_shaped` builds for ``length`` and ``seed``."""
    return _forms(_rng(length, seed))


def _windows(text: str) -> set[str]:
    """Every run of :data:`_STEM_LETTERS` letters in ``text`` (lower case)."""
    low = text.lower()
    return {low[i:i + _STEM_LETTERS] for i in range(len(low) - _STEM_LETTERS + 1)}


class _World:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.names: list[str] = []
        self.types: list[str] = []
        self.by_type: dict[str, list[int]] = {}
        self.values: dict[tuple[int, int], list[int]] = {}   # (subject, relation) -> values, oldest first
        self.stems: set[str] = set()
        self.windows: set[str] = set()   # every stem-long run of letters in a name drawn so far
        self.forms = _forms(rng)

    def _stem(self) -> str:
        while True:
            stem = "".join(self.rng.choice(_SYLLABLES) for _ in range(3))
            if stem not in self.stems and stem not in self.windows:
                return stem

    def new(self, kind: str) -> int:
        patterns = NAME_PATTERNS[kind]
        while True:
            draw = self.rng.random()
            cumulative = 0.0
            pattern = patterns[-1][0]
            for text, share in patterns:
                cumulative += share
                if draw < cumulative:
                    pattern = text
                    break
            stem = self._stem()
            given = [(self.rng.choice(_SYLLABLES) + self.rng.choice(_SYLLABLES)).capitalize() for _ in range(3)]
            name = pattern.format(S=stem.capitalize(), s=stem, G=given[0], H=given[1], I=given[2][0],
                                  T=given[2], N=str(self.rng.randrange(2, 99)))
            windows = _windows(name)
            if not windows & self.stems:   # no other name's stem inside this name
                break
        self.stems.add(stem)
        self.windows |= windows
        self.names.append(name)
        self.types.append(kind)
        self.by_type.setdefault(kind, []).append(len(self.names) - 1)
        return len(self.names) - 1

    def entity(self, kind: str, avoid: set[int]) -> int:
        pool = self.by_type.get(kind, ())
        if pool and self.rng.random() < REUSE:
            for _ in range(4):
                pick = self.rng.choice(pool)
                if pick not in avoid:
                    return pick
        return self.new(kind)

    def relation(self, kinds: tuple[int, ...], exclude: AbstractSet[int] = frozenset()) -> int | None:
        options = [r for r in kinds if r not in exclude]
        if not options:
            return None
        return self.rng.choice(options)

    def any_relation(self) -> int:
        """One relation drawn from all of them (none excluded, so there always is one)."""
        relation = self.relation(tuple(range(len(SHAPED_RELATIONS))))
        assert relation is not None
        return relation


def _chain(world: _World) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """A chain of ``hops`` keys following the newest values, as (anchor, keys)."""
    rng = world.rng
    hops = rng.choices(HOPS, weights=HOP_PROBS)[0]
    relation = world.any_relation()
    rel = SHAPED_RELATIONS[relation]
    anchor = world.entity(rel.subject, set())
    subject, seen = anchor, {anchor}
    keys: list[tuple[int, int]] = []
    added: list[tuple[int, int]] = []
    for hop in range(hops):
        key = (subject, relation)
        if key not in world.values:
            world.values[key] = [world.entity(SHAPED_RELATIONS[relation].object, seen)]
            added.append(key)
        value = world.values[key][-1]
        following = world.relation(_BY_SUBJECT.get(world.types[value], ())) if hop + 1 < hops else None
        if value in seen or (hop + 1 < hops and following is None):
            for k in added:  # a chain that cannot go on leaves no facts behind
                del world.values[k]
            return None
        keys.append(key)
        seen.add(value)
        if following is not None:
            subject, relation = value, following
    return anchor, tuple(keys)


def generate_shaped(length: str = "6k", seed: int = 0) -> dict[str, dict]:
    """Both splits of one length, ``{"sh": record, "mh": record}``, sharing one context."""
    rng = _rng(length, seed)
    world = _World(rng)
    n_facts = LENGTHS[length]
    n_keys = round(n_facts / (1 + OVERRIDE_SHARE))
    chains: list[tuple[int, tuple[tuple[int, int], ...]]] = []
    for _ in range(100 * N_QUESTIONS):
        if len(chains) == N_QUESTIONS or len(world.values) >= n_keys:
            break
        chain = _chain(world)
        if chain is not None and chain not in chains:
            chains.append(chain)
    while len(world.values) < n_keys:  # random facts up to the length
        relation = world.any_relation()
        rel = SHAPED_RELATIONS[relation]
        subject = world.entity(rel.subject, set())
        if (subject, relation) not in world.values:
            world.values[(subject, relation)] = [world.entity(rel.object, {subject})]
    keys = list(world.values)
    # overrides: the newest value is the one the chains follow; the older one is new
    n_over = n_facts - len(keys)
    must = list(dict.fromkeys(rng.choice(chain) for _, chain in chains))
    rest = [k for k in keys if k not in set(must)]
    overridden = must[:n_over] + rng.sample(rest, max(0, min(len(rest), n_over - len(must))))
    for key in overridden:
        rel = SHAPED_RELATIONS[key[1]]
        world.values[key].insert(0, world.entity(rel.object, {key[0], world.values[key][-1]}))
    # order: every older fact before its override
    items: list[tuple[float, tuple[int, int], int]] = []
    for key, values in world.values.items():
        if len(values) == 1:
            items.append((rng.random(), key, values[0]))
        else:
            u = rng.uniform(0.0, 0.85)
            items.append((u, key, values[0]))
            items.append((rng.uniform(u, 1.0) + 1e-9, key, values[1]))
    items.sort(key=lambda item: item[0])
    lines = [HEADER] + [f"{n}. {world.forms[key[1]].format(s=world.names[key[0]], o=world.names[value])}"
                        for n, (_, key, value) in enumerate(items)]
    context = "\n".join(lines)

    once = [k for k in keys if len(world.values[k]) == 1]
    twice = [k for k in keys if len(world.values[k]) > 1]
    n_once = min(len(once), round(NEVER_OVERRIDDEN_SH * N_QUESTIONS))
    sh_keys = rng.sample(once, n_once) + rng.sample(twice, min(len(twice), N_QUESTIONS - n_once))
    rng.shuffle(sh_keys)
    sh = [(_pick(rng, SHAPED_RELATIONS[r].questions).format(s=world.names[s]), world.values[(s, r)][-1])
          for s, r in sh_keys]
    mh = []
    for anchor, chain_keys in chains:
        phrase = world.names[anchor]
        for _, relation in chain_keys[:-1]:
            phrase = _pick(rng, SHAPED_RELATIONS[relation].phrases).format(s=phrase)
        final = _pick(rng, SHAPED_RELATIONS[chain_keys[-1][1]].finals).format(x=phrase)
        mh.append((final[0].upper() + final[1:], world.values[chain_keys[-1]][-1]))
    records = {}
    for split, qa in (("sh", sh), ("mh", mh)):
        source = source_name(split, length)
        records[split] = {
            "context": context, "questions": [q for q, _ in qa], "answers": [[world.names[a]] for _, a in qa],
            "metadata": {"source": source, "qa_pair_ids": [f"{source}_no{i}" for i in range(len(qa))],
                         "generator": "shaped"}}
    return records


def _pick(rng: random.Random, options: tuple[str, ...]) -> str:
    return rng.choice(options)


__all__ = ["generate_shaped", "record_forms"]
