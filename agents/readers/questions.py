"""Question understanding: a natural-language question to a chain of hops through memory.

The reader knows the keys of the facts it was shown (``subject|frame``, the
frames induced by :mod:`tepa_envs.facts.extraction`); it does not know which
value is valid for a key: that is the memory's job. A question is answered
in four steps, the same for every memory method:

1. **Anchor.** The question's longest mention (whole words, case and
   punctuation ignored) of an entity some known key is about.
2. **Relation words.** The question without the anchor, read into tokens:
   phrases of the relation lexicon first (:mod:`~tepa_envs.agents.readers.lexicon`,
   an optional plug-in), then single content words; each token carries its
   stem and the lexicon's concepts for it.
3. **Chain search through the memory.** From the anchor, every known key
   about the current entity is a possible hop; a hop is taken when its frame
   explains at least one question token no earlier hop explained (each frame
   token explains at most one, the nearest to the anchor), and it
   leads to the value the memory retrieves *now* for that key (the first
   record it shows). So each hop sees the memory's current valid value: a
   stale value sends the chain to the wrong entity, which is where revocation
   matters. Chains of 1 to ``max_hops`` hops are searched breadth first. A
   hop that explains nothing (a *bridge*) only leads on, and a chain keeps
   one only when a question word no hop explains is left for it to stand for
   ("the sport X *specialized in*"); a word said once names one relation, so
   no hop may match a word an earlier hop explained.
4. **One answer.** The chain that explains the most question tokens wins
   (then fewer hops, then fewer frame words the question does not mention,
   then the longer anchor); its last hop's value is the answer: the object
   of one fact, never a list of candidates. A question no chain explains
   fully is read again with its words' WordNet definitions ("the neighbour
   of X" for "X lives next door to Y": *neighbour*, "a person who lives near
   another"); that reading is taken when it explains every token the first
   did and more relation words (not the noun naming the kind of answer, "What
   is the *country* of ..."), through as many hops at least.

:func:`answer_question` returns the answer with its provenance (the chain's
keys and values, :class:`Hop`), or an empty answer saying why none was found
(``failure``: ``"no anchor"`` or ``"no chain"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from tepa_envs.agents.readers.lexicon import Lexicon
from tepa_envs.facts.wordnet import wordnet as _wordnet

SUBJECT, OBJECT = "{S}", "{O}"
MAX_HOPS = 4
BEAM = 24
MAX_MENTION = 12  # words
HOP_COST = 0.6
BRIDGE_COST = 1.0
GENERIC_WEIGHT = 0.5
MAX_BRIDGES = 1
GENERIC_CONCEPTS = frozenset({"location", "city", "country"})
"""Concepts that name a kind of place rather than a relation: a token naming only
these explains half as much as a relation word."""

DEFAULT_LEXICON: Lexicon = {}
"""The lexicon used by default: none. Relation words are matched by their stems and,
when WordNet is installed, by its senses and derivations
(:mod:`~tepa_envs.facts.wordnet`); the hand-written
:data:`~tepa_envs.agents.readers.lexicon.RELATION_LEXICON` is an optional plug-in."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset("""a an the of in on at to by for with from as and or is are was were be been being
    what which who whom whose where when how does do did has have had that this these those it its his her
    their they he she him them there whose name named called current currently person individual someone
    something entity one ones into onto about also serve serves served s""".split())


def words_of(text: str) -> tuple[str, ...]:
    """Lower-case word tokens; punctuation and a possessive ``'s`` split tokens."""
    return tuple(_WORD.findall(text.lower()))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light stem: plural ``-ies``/``-s`` removed (``cities`` -> ``city``)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@lru_cache(maxsize=262144)
def alike(a: str, b: str) -> bool:
    """Same word up to an inflection: equal stems, or a common prefix of at least
    four letters after which the shorter has at most two and the longer at most
    five letters left (``educated`` ~ ``education``, not ``head`` ~ ``headquarters``)."""
    a, b = stem(a), stem(b)
    if a == b:
        return True
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    short, long_ = sorted((len(a), len(b)))
    return n >= 4 and short - n <= 2 and long_ - n <= 5


@dataclass(frozen=True)
class Token:
    """A question or frame token: its words and the lexicon concepts it names."""

    words: tuple[str, ...]
    concepts: frozenset[str]
    phrase: bool = False   # a lexicon phrase: it matches by concept (or as the same phrase) only
    generic: bool = False  # names a kind of place rather than a relation
    defined: frozenset[str] = frozenset()   # the concepts of its WordNet definitions

    @property
    def weight(self) -> float:
        return GENERIC_WEIGHT if self.generic else 1.0

    def matches(self, other: "Token") -> bool:
        """Same concept, same phrase, or alike words; or one word named in the other's
        WordNet definition ("neighbour": a person who *lives* near another), when the
        reader reads definitions (:func:`answer_question`)."""
        if self.concepts & other.concepts:
            return True
        if self.phrase or other.phrase:
            return self.words == other.words
        if any(alike(a, b) for a in self.words for b in other.words):
            return True
        return bool(self.concepts & other.defined) or bool(other.concepts & self.defined)


class _Reader:
    """Tokenizer for one lexicon (and WordNet's senses, when used): phrases first, then single words."""

    def __init__(self, lexicon: Lexicon, use_wordnet: bool = True, definitions: bool = False) -> None:
        self.wordnet = _wordnet() if use_wordnet else None
        self.definitions = definitions
        phrases: dict[tuple[str, ...], set[str]] = {}
        singles: dict[str, set[str]] = {}
        for concept, entries in lexicon.items():
            for entry in entries:
                words = words_of(entry)
                if len(words) > 1:
                    phrases.setdefault(words, set()).add(concept)
                elif words:
                    singles.setdefault(words[0], set()).add(concept)
        self.phrases = {p: frozenset(c) for p, c in phrases.items()}
        self.max_phrase = max((len(p) for p in phrases), default=1)
        self.singles = {w: frozenset(c) for w, c in singles.items()}

    def concepts(self, word: str) -> frozenset[str]:
        found: set[str] = set()
        for entry, concepts in self.singles.items():
            if alike(word, entry):
                found |= concepts
        return frozenset(found)

    @lru_cache(maxsize=65536)
    def tokens(self, words: tuple[str, ...]) -> tuple[Token, ...]:
        out: list[Token] = []
        i = 0
        while i < len(words):
            for n in range(min(self.max_phrase, len(words) - i), 1, -1):
                concepts = self.phrases.get(words[i:i + n])
                if concepts is not None:
                    content = tuple(w for w in words[i:i + n] if w not in _STOP)
                    out.append(Token(content, concepts, phrase=True, generic=concepts <= GENERIC_CONCEPTS))
                    i += n
                    break
            else:
                collocation = self._collocation(words, i)
                if collocation is not None:
                    n, concepts = collocation
                    content = tuple(w for w in words[i:i + n] if w not in _STOP)
                    out.append(Token(content, concepts, phrase=True))
                    i += n
                    continue
                word = words[i]
                if word not in _STOP:
                    concepts = self._single(word)
                    out.append(Token((word,), concepts, generic=self._generic(word, concepts),
                                     defined=self._defined(word)))
                i += 1
        return tuple(out)

    def _collocation(self, words: tuple[str, ...], i: int) -> tuple[int, frozenset[str]] | None:
        """A WordNet collocation of 2 or 3 words starting at ``i`` ("passed away"), with its concepts."""
        if self.wordnet is None or words[i] in _STOP:
            return None
        for n in (3, 2):
            if i + n <= len(words):
                concepts = self.wordnet.phrase(words[i:i + n])
                if concepts:
                    return n, concepts
        return None

    @lru_cache(maxsize=65536)
    def _single(self, word: str) -> frozenset[str]:
        found = self.concepts(word)
        if self.wordnet is not None:
            found |= self.wordnet.concepts(word)
        return found

    def _defined(self, word: str) -> frozenset[str]:
        """The concepts of ``word``'s WordNet definitions as a noun and a verb
        (:meth:`~tepa_envs.facts.wordnet.WordNet.defined`); none without WordNet."""
        if self.wordnet is None or not self.definitions:
            return frozenset()
        return self.wordnet.defined(word, "n") | self.wordnet.defined(word, "v")

    def _generic(self, word: str, concepts: frozenset[str]) -> bool:
        named = concepts - self.wordnet.concepts(word) if self.wordnet is not None else concepts
        if named:
            return named <= GENERIC_CONCEPTS
        return word == "where" or (self.wordnet is not None and self.wordnet.is_place(word))


_READERS: dict[tuple[int, bool, bool], tuple[Lexicon, _Reader]] = {}


def _reader_for(lexicon: Lexicon, use_wordnet: bool = True, definitions: bool = False) -> _Reader:
    cached = _READERS.get((id(lexicon), use_wordnet, definitions))
    if cached is None or cached[0] is not lexicon:
        cached = _READERS[(id(lexicon), use_wordnet, definitions)] = (
            lexicon, _Reader(lexicon, use_wordnet, definitions))
    return cached[1]


# ------------------------------------------------------------------ the keys
@dataclass(frozen=True)
class KeyInfo:
    key: str
    subject: tuple[str, ...]   # normalised words
    head: tuple[str, ...]      # the frame with the subject filled in, without the object
    frame: tuple[str, ...]     # the frame's own words


class FactIndex:
    """The known keys, indexed by the entity they are about (normalised words)."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.by_subject: dict[tuple[str, ...], list[KeyInfo]] = {}
        self.infos: list[KeyInfo] = []
        for key in keys:
            subject, sep, frame = key.partition("|")
            if not sep:
                continue
            s = words_of(subject)
            if not s:
                continue
            frame_words = words_of(frame.replace(SUBJECT, " ").replace(OBJECT, " "))
            head = words_of(frame.replace(SUBJECT, " " + subject + " ").replace(OBJECT, " "))
            info = KeyInfo(key, s, head, frame_words)
            self.infos.append(info)
            self.by_subject.setdefault(s, []).append(info)
        self._by_head: dict[tuple[str, ...], list[KeyInfo]] | None = None

    def __len__(self) -> int:
        return len(self.infos)

    def about(self, entity: tuple[str, ...]) -> list[tuple[KeyInfo, tuple[str, ...]]]:
        """Keys about ``entity`` with the words that relate it: the frame's words for a
        key whose subject it is, else the head's other words for a key whose head
        mentions it (a frame that kept part of an entity in its subject)."""
        direct = self.by_subject.get(entity)
        if direct:
            return [(info, info.frame) for info in direct]
        if self._by_head is None:  # word -> keys whose head has it, built on first need
            self._by_head = {}
            for info in self.infos:
                for word in set(info.head):
                    self._by_head.setdefault((word,), []).append(info)
        out = []
        for info in self._by_head.get(entity[:1], ()):
            rest = _without(info.head, entity)
            if rest != info.head:
                out.append((info, rest))
        return out

    def mentions(self, words: tuple[str, ...]) -> list[tuple[int, int]]:
        """Spans ``(start, end)`` of known subjects among ``words``, longest first,
        none inside a longer one."""
        spans = [(i, j) for i in range(len(words)) for j in range(i + 1, min(len(words), i + MAX_MENTION) + 1)
                 if words[i:j] in self.by_subject]
        spans.sort(key=lambda s: (-(s[1] - s[0]), s[0]))
        kept: list[tuple[int, int]] = []
        for s in spans:
            if not any(k[0] <= s[0] and s[1] <= k[1] for k in kept):
                kept.append(s)
        return kept


def _without(words: tuple[str, ...], part: tuple[str, ...]) -> tuple[str, ...]:
    n = len(part)
    for i in range(len(words) - n + 1):
        if words[i:i + n] == part:
            return words[:i] + words[i + n:]
    return words


# ----------------------------------------------------------------- answering
@dataclass(frozen=True)
class Hop:
    """One step of a chain: the key looked up and the value the memory returned."""

    key: str
    value: str
    t: int | None = None   # the serial (``created``) of the record used, when the memory says


@dataclass(frozen=True)
class QuestionReading:
    """The answer to one question and how it was found."""

    answer: str
    hops: tuple[Hop, ...] = ()
    anchor: str = ""
    explained: int = 0            # question tokens the chain explains
    tokens: int = 0               # question tokens besides the anchor
    failure: str = ""             # "" | "no anchor" | "no chain"


@dataclass
class _State:
    entity: tuple[str, ...]
    hops: tuple[Hop, ...]
    covered: frozenset[int]
    unexplained: int
    bridges: int = 0
    score: float = 0.0
    last_bridge: bool = False


Retrieve = Callable[[str], list]


def answer_question(question: str, index: FactIndex, retrieve: Retrieve, *,
                    lexicon: Lexicon | None = None, max_hops: int = MAX_HOPS,
                    use_wordnet: bool = True) -> QuestionReading:
    """Answer ``question`` by a chain through ``retrieve`` (``key -> records``, the
    memory's current records for a key) over the keys of ``index`` (see the module).

    ``lexicon``: concept -> words and phrases (default ``{}``: none, WordNet carries
    the matching; :data:`~tepa_envs.agents.readers.lexicon.RELATION_LEXICON` is an
    optional plug-in). ``use_wordnet``: also match words by their WordNet senses and
    derivations (:mod:`~tepa_envs.facts.wordnet`) when WordNet is installed; a question
    whose words relate no chain, or a chain leaving words unexplained, is read again
    with the words' WordNet definitions (:meth:`Token.matches`: "Who lives next door
    to X?" and "The neighbour of X is Y", *neighbour* being "a person who lives near
    another"; see the module for when that reading is taken).
    """
    lexicon = DEFAULT_LEXICON if lexicon is None else lexicon
    reading, covered, relation_words = _answer(question, index, retrieve, _reader_for(lexicon, use_wordnet),
                                               max_hops)
    if use_wordnet and (reading.failure == "no chain" or reading.explained < reading.tokens):
        # a chain leaving relation words unexplained is read again with the words' definitions:
        # the new reading is taken when it explains what the first did and more relation words,
        # through as many hops at least (definitions add what words left out, not replace hops)
        again, more, _ = _answer(question, index, retrieve, _reader_for(lexicon, use_wordnet, True), max_hops)
        if not again.failure and (reading.failure or (covered < more and bool((more - covered) & relation_words)
                                                      and len(again.hops) >= len(reading.hops))):
            return again
    return reading


def _answer(question: str, index: FactIndex, retrieve: Retrieve, reader: _Reader,
            max_hops: int) -> tuple[QuestionReading, frozenset[int], frozenset[int]]:
    """The reading, the question tokens its chain explains and the tokens naming a relation
    (not a kind of place, not the kind of answer asked for)."""
    words = words_of(question)
    spans = index.mentions(words)
    if not spans:
        return QuestionReading("", failure="no anchor"), frozenset(), frozenset()
    best: tuple[tuple, _State, str, tuple[Token, ...]] | None = None
    longest = spans[0][1] - spans[0][0]
    for start, end in spans:
        if end - start < longest and best is not None:
            break  # shorter mentions are tried only when the longest found no chain
        anchor = words[start:end]
        marked = reader.tokens(words[:start] + ("\x00",) + words[end:])
        at = next(i for i, t in enumerate(marked) if t.words == ("\x00",))
        tokens = marked[:at] + marked[at + 1:]
        # how far each token is from the anchor: inner hops sit next to it ("the X of the Y of A")
        distance = tuple(at - i if i < at else i - at + 1 for i in range(len(tokens)))
        frame_tokens: dict[tuple[str, ...], tuple[Token, ...]] = {}
        for state in _search(anchor, tokens, distance, index, retrieve, reader, frame_tokens, max_hops):
            rank = (round(state.score, 6), -state.unexplained, end - start)
            if best is None or rank > best[0]:
                best = (rank, state, " ".join(anchor), tokens)
        if best is None:
            longest = 0  # try the other mentions
    if best is None:
        return (QuestionReading("", anchor=" ".join(words[spans[0][0]:spans[0][1]]), failure="no chain"),
                frozenset(), frozenset())
    _, state, anchor_text, tokens = best
    kind = (_answer_type(words),)
    return (QuestionReading(state.hops[-1].value, state.hops, anchor_text, len(state.covered), len(tokens)),
            state.covered, frozenset(i for i, t in enumerate(tokens) if not t.generic and t.words[:1] != kind))


_WH = frozenset({"what", "which"})
_LEAD = frozenset({"is", "was", "are", "were", "the", "a", "an"})


def _answer_type(words: tuple[str, ...]) -> str | None:
    """The noun naming the kind of answer asked for ("What is the *country* of ...",
    "To which *country* ..."), if the question opens with one."""
    at = 0 if words[:1] and words[0] in _WH else 1 if words[1:2] and words[1] in _WH else None
    if at is None:
        return None
    rest = [w for w in words[at + 1:at + 4] if w not in _LEAD]
    return rest[0] if rest and rest[0] not in _STOP else None


def _explained(tokens: Sequence[Token], distance: Sequence[int], frame: Sequence[Token],
               covered: frozenset[int]) -> frozenset[int]:
    """The question tokens a hop's frame explains: each frame token explains, per
    distinct question word, the not yet explained occurrence nearest the anchor ("the
    spouse of the spouse of A" is two hops; "the husband or wife of A" is one)."""
    taken: dict[tuple[str, ...], int] = {}
    for f in frame:
        for i, tok in enumerate(tokens):
            if i in covered or not tok.matches(f):
                continue
            best = taken.get(tok.words)
            if best is None or (distance[i], i) < (distance[best], best):
                taken[tok.words] = i
    return frozenset(taken.values())


def _search(anchor: tuple[str, ...], tokens: Sequence[Token], distance: Sequence[int], index: FactIndex,
            retrieve: Retrieve,
            reader: _Reader, frame_tokens: dict, max_hops: int) -> list[_State]:
    frontier = [_State(anchor, (), frozenset(), 0)]
    found: list[_State] = []
    words = [t.words for t in tokens]
    once = frozenset(i for i, w in enumerate(words) if words.count(w) == 1)
    for depth in range(max_hops):
        grown: list[_State] = []
        for state in frontier:
            seen_entities = {anchor, *(words_of(h.value) for h in state.hops)}
            for info, relation_words in index.about(state.entity):
                ftoks = frame_tokens.get(relation_words)
                if ftoks is None:
                    ftoks = frame_tokens[relation_words] = reader.tokens(relation_words)
                new = _explained(tokens, distance, ftoks, state.covered)
                bridge = not new
                if any(f.matches(tokens[i]) for i in state.covered & once for f in ftoks):
                    continue  # a word said once names one relation: two hops cannot both be it
                if bridge and (state.bridges >= MAX_BRIDGES or depth + 1 >= max_hops):
                    continue
                records = retrieve(info.key)
                if not records:
                    continue
                value = records[0].value
                target = words_of(value)
                if not target or target in seen_entities:
                    continue
                unexplained = sum(1 for f in ftoks if not any(f.matches(t) for t in tokens))
                hop = Hop(info.key, value, records[0].created)
                score = (state.score + sum(tokens[i].weight for i in new) - HOP_COST
                         - (BRIDGE_COST if bridge else 0.0))
                grown.append(_State(target, state.hops + (hop,), state.covered | new,
                                    state.unexplained + unexplained, state.bridges + bridge, score, bridge))
        if not grown:
            break
        grown.sort(key=lambda s: (-s.score, s.unexplained))
        frontier = grown[:BEAM]
        # a chain ends on a hop that explains something (a bridge only leads on), and each
        # bridge stands for a question word no hop explains ("the sport X *specialized in*")
        found.extend(s for s in frontier if not s.last_bridge and len(tokens) - len(s.covered) >= s.bridges)
    return found


__all__ = ["FactIndex", "Hop", "QuestionReading", "Token", "alike", "answer_question", "stem", "words_of"]
