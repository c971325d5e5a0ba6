"""The fast paths that keep a 262k FactConsolidation episode within its 2 s budget give
exactly what the plain computations give.

``semantic-retrieval`` ranks every stored fact by its similarity to the query rounded to
6 decimals, newest first among equals; it now sorts only the candidates that can reach
the top ``k`` (:func:`~tepa_envs.agents.memories.semantic.ranking_candidates`). Checked
against the full sort, on random scores with many ties and on real memories.
"""

from __future__ import annotations

import numpy as np
import pytest

from tepa_envs.agents.memories.semantic import SemanticRetrieval, hashed_vector, ranking_candidates
from tepa_envs.core import Evidence


def full_sort(scores: np.ndarray, times: list[int], k: int) -> list[int]:
    """The ranking as it was written before the fast path: every index sorted."""
    return sorted(range(len(scores)), key=lambda i: (-round(float(scores[i]), 6), -times[i]))[:k]


def fast_sort(scores: np.ndarray, times: list[int], k: int) -> list[int]:
    return sorted(ranking_candidates(scores, k), key=lambda i: (-round(float(scores[i]), 6), -times[i]))[:k]


@pytest.mark.parametrize("seed", range(6))
def test_candidates_give_the_full_sorts_top_k(seed):
    rng = np.random.default_rng(seed)
    levels = np.array([0.0, 0.1, 0.2500001, 0.25, 0.7071068, 0.70710677, 1.0], dtype=np.float32)
    for _ in range(300):
        n, k = int(rng.integers(1, 400)), int(rng.integers(1, 8))
        if rng.random() < 0.5:  # heavy ties, and values a rounding step apart
            scores = rng.choice(levels, n) + rng.choice([0, 4e-7, -4e-7, 6e-7], n).astype(np.float32)
        else:
            scores = rng.random(n).astype(np.float32)
        times = rng.integers(0, 30, n).tolist()
        assert fast_sort(scores, times, k) == full_sort(scores, times, k)
        candidates = ranking_candidates(scores, k)
        assert candidates == sorted(candidates) and len(candidates) >= min(k, n)


def test_the_memory_retrieves_what_the_full_sort_retrieves():
    rng = np.random.default_rng(7)
    words = ["born", "city", "married", "author", "capital", "river", "Doka", "Nuki", "Letubu"]
    memory = SemanticRetrieval(top_k=3, dim=64)  # a small dim: many hash collisions and ties
    for t in range(600):
        key = " ".join(rng.choice(words, 2)) + "|rel"
        if rng.random() < 0.3:
            memory.retrieve(key, " ".join(rng.choice(words, int(rng.integers(1, 6)))))
        memory.observe(Evidence(key, f"v{t}", t, None, "fact"))
    n = len(memory._items)
    for _ in range(200):
        context = " ".join(rng.choice(words, int(rng.integers(1, 6))))
        scores = memory._vectors[:n] @ hashed_vector(context, memory.dim)
        expected = full_sort(scores, [item[2] for item in memory._items], memory.top_k)
        got = memory.retrieve("x|rel", context)
        assert [(r.key, r.value, r.created, r.score) for r in got] == [
            (*memory._items[i], float(scores[i])) for i in expected]
