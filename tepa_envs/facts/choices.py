"""FactConsolidation's multiple-choice answers (``action_mode="choice"``).

Each question offers ``k`` candidate answers drawn from the episode's own keyed
facts (its :class:`~tepa_envs.core.Evidence`, ``subject|frame`` keys, whatever
the extraction), so the same rule serves generated records and the official
rows:

1. **The question's facts.** The subjects the question names (a keyed subject
   whose normalised name occurs, word-bounded, in the normalised question) are
   followed through the newest value of each key, 1 hop for ``split="sh"``, 2
   to 4 for ``"mh"``; a path whose last value is a gold alias (the answer metric:
   an alias inside the value) is the question's chain. Every such path is kept.
2. **Current.** The last value of the first path (the fact's own wording, as the
   other candidates have theirs); ``answers[0]`` when no path was found.
3. **Stale.** The answers the overridden facts give, newest override first: the
   older values of each path's last key, then, for every older value of an
   earlier hop, the value reached by following the rest of the path's frames
   from it (the answer a memory that kept that stale hop would give).
4. **Distractors.** Other values stated under the last key's frame in the
   episode, drawn without replacement by the question's generator; then any
   value of the episode (when the frame has too few, or no path was found).

No candidate other than the current one scores under the answer metric, no two
normalise alike, and at most ``k - 1`` stale values are kept. The ``k`` are
shown in an order drawn by the same generator. A record with fewer than ``k``
such values in all is refused (``ValueError`` naming ``num_choices``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from tepa_envs.core import Evidence
from tepa_envs.facts.metric import normalize_answer

CANDIDATE_KINDS = ("current", "stale", "distractor")
HOPS = {"sh": (1,), "mh": (2, 3, 4)}
CODE_BITS = 16
"""Bits of a candidate's code in the observation (:func:`candidate_code`)."""
MAX_CHOICES = 16
"""The largest ``num_choices`` accepted."""


@dataclass(frozen=True, slots=True)
class Candidates:
    """One question's candidate answers, in the order shown, and what each one is."""

    texts: tuple[str, ...]
    kinds: tuple[str, ...]   # one of CANDIDATE_KINDS per candidate
    correct: int             # index of the current value

    def index_of(self, value: str) -> int | None:
        """The candidate ``value`` states: the one that normalises alike, else the first whose
        normalised text occurs in ``value``'s (as the answer metric reads); ``None`` if none."""
        norm = normalize_answer(value)
        normalized = [normalize_answer(t) for t in self.texts]
        if norm in normalized:
            return normalized.index(norm)
        return next((i for i, n in enumerate(normalized) if n and f" {n} " in f" {norm} "), None)


class AnswerIndex:
    """The episode's keyed facts as candidate sources: each key's values in stream order,
    each frame's values, each subject's keys."""

    def __init__(self, evidence: tuple[Evidence | None, ...]) -> None:
        self.history: dict[str, list[str]] = {}
        by_frame: dict[str, dict[str, None]] = {}
        outgoing: dict[str, list[str]] = {}
        values: dict[str, None] = {}
        for e in evidence:
            if e is None:
                continue
            subject, _, frame = e.key.partition("|")
            if e.key not in self.history:
                self.history[e.key] = []
                outgoing.setdefault(subject, []).append(e.key)
            self.history[e.key].append(e.value)
            by_frame.setdefault(frame, {})[e.value] = None
            values[e.value] = None
        self.by_frame = {frame: tuple(v) for frame, v in by_frame.items()}
        self.outgoing = outgoing
        self.values = tuple(values)
        self._subjects = tuple((f" {normalize_answer(s)} ", s) for s in outgoing if normalize_answer(s))

    def mentioned(self, question: str) -> list[str]:
        """The keyed subjects the question names, in stream order."""
        text = f" {normalize_answer(question)} "
        return [s for padded, s in self._subjects if padded in text]

    def paths(self, question: str, split: str, is_gold: _Gold) -> list[tuple[str, ...]]:
        """The key paths from a named subject through newest values to a gold value."""
        hops = HOPS[split]
        found: list[tuple[str, ...]] = []

        def walk(path: tuple[str, ...], seen: frozenset[str]) -> None:
            value = self.history[path[-1]][-1]
            if len(path) in hops and is_gold(value):
                found.append(path)
            if len(path) < hops[-1] and value not in seen:
                for key in self.outgoing.get(value, ()):
                    walk(path + (key,), seen | {value})

        for subject in self.mentioned(question):
            for key in self.outgoing[subject]:
                walk((key,), frozenset((subject,)))
        return found

    def stale(self, path: tuple[str, ...]) -> list[str]:
        """The answers the overridden facts on ``path`` give, newest override first, last hop first."""
        out: list[str] = []
        frames = [key.partition("|")[2] for key in path]
        for i in range(len(path) - 1, -1, -1):
            for old in reversed(self.history[path[i]][:-1]):
                value: str | None = old
                for frame in frames[i + 1:]:
                    values = self.history.get(f"{value}|{frame}")
                    value = None if values is None else values[-1]
                    if value is None:
                        break
                if value is not None:
                    out.append(value)
        return out


class _Gold:
    """The answer metric against one question's aliases."""

    def __init__(self, answers: tuple[str, ...]) -> None:
        self.aliases = [a for a in (normalize_answer(x) for x in answers) if a]

    def __call__(self, value: str) -> bool:
        norm = normalize_answer(value)
        return any(a in norm for a in self.aliases)


class _Picker:
    """The candidates chosen so far: distinct normalised texts, none but the first scoring."""

    def __init__(self, current: str, k: int, is_gold: _Gold) -> None:
        self.k, self.is_gold = k, is_gold
        self.chosen, self.kinds = [current], ["current"]
        self.seen = {normalize_answer(current)}

    @property
    def full(self) -> bool:
        return len(self.chosen) >= self.k

    def admit(self, value: str, kind: str) -> None:
        norm = normalize_answer(value)
        if self.full or not norm or norm in self.seen or self.is_gold(value):
            return
        self.seen.add(norm)
        self.chosen.append(value)
        self.kinds.append(kind)

    def fill(self, pool: tuple[str, ...], rng: np.random.Generator) -> None:
        """Distractors from ``pool``, in an order drawn by ``rng``, until ``k`` are chosen."""
        if self.full or not pool:
            return
        for i in rng.permutation(len(pool)).tolist():
            self.admit(pool[i], "distractor")
            if self.full:
                return


def draw_candidates(index: AnswerIndex, question: str, answers: tuple[str, ...], split: str, k: int,
                    rng: np.random.Generator) -> Candidates:
    """The ``k`` candidates of one question (module docstring), shuffled by ``rng``."""
    is_gold = _Gold(answers)
    paths = index.paths(question, split, is_gold)
    picker = _Picker(index.history[paths[0][-1]][-1] if paths else answers[0], k, is_gold)
    for path in paths:
        for value in index.stale(path):
            picker.admit(value, "stale")
    if paths:
        picker.fill(index.by_frame.get(paths[0][-1].partition("|")[2], ()), rng)
    picker.fill(index.values, rng)
    if not picker.full:
        raise ValueError(f"num_choices={k} needs {k} distinct answer values; the record offers "
                         f"{len(picker.chosen)} for the question {question!r}")
    order = rng.permutation(k).tolist()
    return Candidates(tuple(picker.chosen[i] for i in order), tuple(picker.kinds[i] for i in order),
                      order.index(0))


def candidate_code(text: str, bits: int = CODE_BITS) -> np.ndarray:
    """A candidate's code in the observation: the first ``bits`` bits of the BLAKE2b digest of its
    normalised text, as ``int8`` 0/1 (the same answer has the same code in every question,
    episode and process; it says nothing about which candidate is correct)."""
    digest = hashlib.blake2b(normalize_answer(text).encode("utf-8"), digest_size=-(-bits // 8)).digest()
    return np.unpackbits(np.frombuffer(digest, dtype=np.uint8))[:bits].astype(np.int8)
