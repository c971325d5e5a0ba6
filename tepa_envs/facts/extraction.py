"""Data-driven fact extraction: relation frames induced from a record's own sentences.

No list of sentence forms is used. Given all fact sentences of a record,
:func:`induce_facts` finds for each sentence a *frame* ``P {S} M {O}``: a
constant prefix ``P`` (possibly empty), the subject slot, a constant middle
``M`` and the object slot, which is the sentence's tail (the value a later
fact may override). Frames are induced from the data alone:

1. Every split of a sentence into ``P``/``S``/``M``/``O`` (word tokens) is a
   candidate frame ``(P, M)``.
2. A candidate is *attested* when at least two sentences fit it with at least
   two different subjects and at least two different objects (a frame that
   absorbed words of its subject or object would see one filler only).
3. Each sentence takes its attested frame with the most constant words (ties:
   the frame more sentences fit, then the shorter prefix).
4. Consolidation: a chosen frame ``(P, M + w...)`` that extends a chosen frame
   ``(P, M)`` which at least half as many sentences chose had absorbed the start of
   its objects ("... is a citizen of United {O}") and is folded into ``(P, M)``;
   and (facts about the same subject that share a long prefix and differ in
   the tail are the same subject and relation) when one sentence's keyed
   prefix ``P S M`` is a proper word prefix of another's, the longer one takes
   the shorter boundary.

A sentence no attested frame fits is not keyed (``None``). The key is
``"<subject>|<frame>"`` with the frame as a slot string,
e.g. ``"Victoria Beckham|{S} is married to {O}"``.

:func:`match_question` is the core of question understanding (used by the
reader strategy ``read_question`` in :mod:`tepa_envs.agents.readers.reading`,
not by the environment): it maps a single-hop question to one of the keys the
memory may know, by a subject mention in the question and lexical overlap
between the question's remaining words and the frame's content words.

``lexicon`` (optional plug-in, both functions): a mapping from a question word
to extra words it may stand for (``{"spouse": ("married",)}``), consulted when
overlapping question and frame words; empty by default, and nothing in this
module depends on one.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

SUBJECT, OBJECT = "{S}", "{O}"

Lexicon = Mapping[str, Sequence[str]]


@dataclass(frozen=True, slots=True)
class InducedFact:
    subject: str
    frame: str     # "P {S} M {O}"
    object: str

    @property
    def key(self) -> str:
        return f"{self.subject}|{self.frame}"


def _tokens(text: str) -> tuple[str, ...]:
    text = text.strip()
    if text.endswith("."):
        text = text[:-1]
    return tuple(text.split())


def _frame(prefix: Sequence[str], middle: Sequence[str]) -> str:
    return " ".join([*prefix, SUBJECT, *middle, OBJECT])


def induce_facts(texts: Sequence[str]) -> list[InducedFact | None]:
    """``(subject, frame, object)`` of every sentence, induced from all of them (see the module)."""
    sentences = [_tokens(t) for t in texts]
    fits: dict[tuple, list[tuple[int, tuple[str, ...], tuple[str, ...]]]] = defaultdict(list)
    for n, words in enumerate(sentences):
        size = len(words)
        for i in range(size - 2):
            for j in range(i + 1, size - 1):
                for k in range(j + 1, size):
                    fits[(words[:i], words[j:k])].append((n, words[i:j], words[k:]))
    attested: dict[tuple, int] = {}
    for frame, rows in fits.items():
        if len(rows) >= 2 and len({r[1] for r in rows}) >= 2 and len({r[2] for r in rows}) >= 2:
            attested[frame] = len({r[0] for r in rows})
    best: list[tuple[tuple, int, int] | None] = [None] * len(sentences)
    best_score: list[tuple] = [()] * len(sentences)
    for frame, support in attested.items():
        prefix, middle = frame
        score = (len(prefix) + len(middle), support, -len(prefix))
        for n, subject, obj in fits[frame]:
            if best[n] is None or score > best_score[n]:
                best[n], best_score[n] = (frame, len(subject), len(obj)), score
    # consolidation of frames: a chosen frame whose middle extends a chosen frame of the same
    # prefix with at least half as many sentences absorbed the start of its objects
    chosen_count: dict[tuple, int] = defaultdict(int)
    for b in best:
        if b is not None:
            chosen_count[b[0]] += 1
    for n, chosen in enumerate(best):
        if chosen is None:
            continue
        (prefix, middle), s_len, o_len = chosen
        for cut in range(len(middle) - 1, 0, -1):
            shorter = (prefix, middle[:cut])
            if 2 * chosen_count.get(shorter, 0) >= chosen_count[(prefix, middle)]:
                best[n] = (shorter, s_len, o_len + len(middle) - cut)
                break
    # consolidation of facts: a keyed prefix that extends another keyed prefix absorbed its object's start
    heads = {sentences[n][:len(sentences[n]) - b[2]] for n, b in enumerate(best) if b is not None}
    facts: list[InducedFact | None] = []
    for n, chosen in enumerate(best):
        if chosen is None:
            facts.append(None)
            continue
        (prefix, middle), s_len, o_len = chosen
        words = sentences[n]
        head_len = len(words) - o_len
        shorter = next((h for h in range(len(prefix) + s_len + 1, head_len) if words[:h] in heads), None)
        if shorter is not None:
            middle = words[len(prefix) + s_len:shorter]
            o_len = len(words) - shorter
        subject = " ".join(words[len(prefix):len(prefix) + s_len])
        facts.append(InducedFact(subject, _frame(prefix, middle), " ".join(words[len(words) - o_len:])))
    return facts


# ------------------------------------------------------------ questions
_WORD = re.compile(r"[\w']+")
_STOP = frozenset("""a an the of in on at to by for with from as and or is are was were be been be
    what which who whom whose where when how does do did has have had that this his her its their
    there name named""".split())


def _content(text: str) -> list[str]:
    words = []
    for w in _WORD.findall(text.lower()):
        w = w[:-2] if w.endswith("'s") else w
        if w and w not in _STOP:
            words.append(w)
    return words


def _alike(a: str, b: str) -> bool:
    """Same word up to inflection: one a prefix of the other (3+ letters) or a shared 5-letter stem."""
    short, long_ = sorted((a, b), key=len)
    return (len(short) >= 3 and long_.startswith(short)) or (len(short) >= 5 and short[:5] == long_[:5])


def _overlap(question_words: Iterable[str], frame_words: Sequence[str], lexicon: Lexicon) -> int:
    score = 0
    for word in question_words:
        senses = (word, *lexicon.get(word, ()))
        if any(_alike(s, f) for s in senses for f in frame_words):
            score += 1
    return score


def _mentions(question: str, subject: str) -> tuple[int, int] | None:
    """Character span of ``subject`` in ``question`` as whole words (case-insensitive), or None."""
    match = re.search(r"(?<![\w])" + re.escape(subject.lower()) + r"(?![\w])", question.lower())
    return None if match is None else match.span()


def match_question(question: str, keys: Iterable[str], lexicon: Lexicon | None = None) -> str:
    """The key (``subject|frame``) a single-hop question asks about, or ``""``.

    Candidates are keys whose subject the question mentions; each scores the
    overlap between the question's words outside the subject and the frame's
    content words (``lexicon`` may add senses to question words). The highest
    overlap wins, then the longer subject mention. No candidate with overlap
    gives ``""`` unless exactly one frame is known for the mentioned subject.
    """
    lexicon = lexicon or {}
    by_subject: dict[str, set[str]] = defaultdict(set)
    for key in keys:
        subject, sep, frame = key.partition("|")
        if sep and _content(subject):
            by_subject[subject].add(frame)
    best: tuple[int, int, str] | None = None
    for subject, frames in by_subject.items():
        span = _mentions(question, subject)
        if span is None:
            continue
        rest = _content(question[:span[0]] + " " + question[span[1]:])
        for frame in sorted(frames):
            overlap = _overlap(rest, _content(frame.replace(SUBJECT, " ").replace(OBJECT, " ")), lexicon)
            if overlap == 0 and len(frames) > 1:
                continue
            candidate = (overlap, len(subject), f"{subject}|{frame}")
            if best is None or candidate[:2] > best[:2]:
                best = candidate
    return "" if best is None else best[2]


__all__ = ["InducedFact", "induce_facts", "match_question"]
