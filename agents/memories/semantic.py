"""Semantic retrieval: memories found by similarity of the task's text, not by key."""

from __future__ import annotations

import zlib

import numpy as np

from tepa_envs.core import Evidence, LifecycleState, Record, check_positive_int

from tepa_envs.agents.memories.baselines import asserts_value
from tepa_envs.agents.memories.lexical import tokenize
from tepa_envs.agents.memories.protocol import MemoryBase

def hashed_vector(text: str, dim: int) -> np.ndarray:
    """L2-normalised hashed bag of words (unigrams and bigrams), stable across processes."""
    tokens = tokenize(text)
    grams = tokens + [a + " " + b for a, b in zip(tokens, tokens[1:])]
    vector = np.zeros(dim, dtype=np.float32)
    for gram in grams:
        vector[zlib.crc32(gram.encode()) % dim] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def ranking_candidates(scores: np.ndarray, k: int) -> list[int]:
    """The indices, in increasing order, that can be among the first ``k`` when every index
    is ranked by its score rounded to 6 decimals (descending), ties broken any way.

    Those whose raw score is within 2e-6 of the ``k``-th largest raw score: rounding moves
    a score by at most 5e-7, so any other index ranks below at least ``k`` of these.
    Sorting only these by the full key gives the same first ``k`` as sorting every index
    (Python's sort is stable and the candidates keep index order).
    """
    n = len(scores)
    if n <= k:
        return list(range(n))
    wide = scores.astype(np.float64)
    kth = float(np.partition(wide, n - k)[n - k])
    return np.flatnonzero(wide >= kth - 2e-6).tolist()


class SemanticRetrieval(MemoryBase):
    """Stores each asserted value with the text of its task; retrieves the values
    whose texts are most similar (cosine) to the query's text, whatever their key.

    The text stored with a write is the context the agent last queried for that
    key (the task it acted on); without one, the key itself.

    Args:
        top_k: number of most similar memories retrieved.
        dim: size of the hashed bag-of-words vectors.
    """

    name = "semantic-retrieval"

    def __init__(self, *, top_k: int = 3, dim: int = 512) -> None:
        super().__init__()
        self.top_k = check_positive_int("top_k", top_k)
        self.dim = check_positive_int("dim", dim)
        self._reset()

    def _reset(self) -> None:
        self._vectors = np.zeros((64, self.dim), dtype=np.float32)
        self._items: list[tuple[str, str, int]] = []
        self._last_context: dict[str, str] = {}

    def _observe(self, evidence: Evidence) -> None:
        if not asserts_value(evidence):
            return
        text = self._last_context.get(evidence.key) or evidence.key
        n = len(self._items)
        if n == len(self._vectors):
            self._vectors = np.concatenate([self._vectors, np.zeros_like(self._vectors)])
        self._vectors[n] = hashed_vector(text, self.dim)
        self._items.append((evidence.key, evidence.value, evidence.t))

    def _retrieve(self, key: str, context: str) -> list[Record]:
        self._last_context[key] = context
        n = len(self._items)
        if n == 0:
            return []
        query = hashed_vector(context or key, self.dim)
        scores = self._vectors[:n] @ query
        order = sorted(ranking_candidates(scores, self.top_k),
                       key=lambda i: (-round(float(scores[i]), 6), -self._items[i][2]))
        records = []
        for i in order[: self.top_k]:
            item_key, value, t = self._items[i]
            records.append(Record(item_key, value, 1, 0, LifecycleState.ACTIVE, t, t, float(scores[i])))
        return records
