import math

import numpy as np
import pytest

from tepa_envs.agents import (
    AppendOnly,
    ConflictAwareRecency,
    Evidence,
    ReactiveForgetting,
    TemporalRecency,
    make_memory,
)
from tepa_envs.agents.memories.lexical import BM25Index, tokenize

DOCS = [
    "Doka Letubu born in Rezobu",
    "Doka Letubu spouse Nuki Boputi",
    "Nuki Boputi born in Port Lanopa",
    "Rezobu mayor Zora Nifimi",
    "Zora Nifimi employer Kerumu Institute of Advanced Study",
]


def reference_bm25(docs: list[str], query: str, k1: float = 1.2, b: float = 0.75) -> list[float]:
    tokenized = [tokenize(d) for d in docs]
    avg = sum(len(t) for t in tokenized) / len(tokenized)
    scores = []
    for tokens in tokenized:
        score = 0.0
        for term in set(tokenize(query)):
            df = sum(term in t for t in tokenized)
            if df == 0:
                continue
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            tf = tokens.count(term)
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(tokens) / avg))
        scores.append(score)
    return scores


def test_scores_match_the_bm25_formula_as_documents_arrive():
    index = BM25Index()
    for n, doc in enumerate(DOCS, start=1):
        assert index.add(doc) == n - 1
        for query in ("Where was Doka Letubu born?", "Who is the mayor of Rezobu", "zzz"):
            np.testing.assert_allclose(index.scores(query), reference_bm25(DOCS[:n], query), rtol=1e-12)
    assert len(index) == len(DOCS)


def test_top_ranks_by_score_keeps_ties_and_drops_non_matches():
    index = BM25Index()
    for doc in ["alpha beta", "alpha gamma", "delta", "alpha beta"]:
        index.add(doc)
    assert [d for d, _ in index.top("beta", 1)] == [0, 3], "a tie at the cut keeps the whole group"
    ranked = index.top("alpha beta", 5)
    assert [d for d, _ in ranked] == [0, 3, 1]
    assert ranked[0][1] == ranked[1][1] > ranked[2][1] > 0
    assert index.top("omega", 3) == []
    with pytest.raises(ValueError, match="k must be"):
        index.top("alpha", 0)
    with pytest.raises(TypeError):
        index.add(3)
    with pytest.raises(ValueError, match="b must be in"):
        BM25Index(b=2.0)


def facts(memory, items):
    for t, (key, value) in enumerate(items):
        memory.observe(Evidence(key, value, t, None, "fact"))


def test_lexical_append_only_retrieves_across_keys_by_context():
    memory = AppendOnly(retrieval="lexical", top_k=2)
    facts(memory, [("Doka Letubu|born_in", "Rezobu"), ("Nuki Boputi|born_in", "Lanopa"),
                   ("Doka Letubu|spouse", "Nuki Boputi")])
    records = memory.retrieve("", "Which city was Nuki Boputi born in?")
    assert [(r.key, r.value) for r in records] == [("Nuki Boputi|born_in", "Lanopa"),
                                                   ("Doka Letubu|spouse", "Nuki Boputi")]
    assert records[0].score > records[1].score > 0
    assert memory.retrieve("", "nothing matches here") == []
    key_memory = AppendOnly()
    facts(key_memory, [("Doka Letubu|born_in", "Rezobu")])
    assert key_memory.retrieve("", "Which city was Doka Letubu born in?") == []


def test_ties_are_broken_by_each_memory_s_own_ranking():
    items = [("Doka Letubu|born_in", "Rezobu"), ("Doka Letubu|born_in", "Lanopa"),
             ("Doka Letubu|born_in", "Rezobu"), ("Doka Letubu|born_in", "Mofode")]
    query = "Which city was Doka Letubu born in?"
    append_only = AppendOnly(retrieval="lexical")
    facts(append_only, items)
    assert [r.value for r in append_only.retrieve("Doka Letubu|born_in", query)] == ["Rezobu", "Mofode", "Lanopa"]
    recency = TemporalRecency(retrieval="lexical")
    facts(recency, items)
    assert [r.value for r in recency.retrieve("Doka Letubu|born_in", query)] == ["Mofode", "Rezobu", "Lanopa"]
    assert all(r.conflict == 2 for r in recency.retrieve("Doka Letubu|born_in", query))
    car = ConflictAwareRecency(retrieval="lexical")
    facts(car, items)
    assert car.retrieve("Doka Letubu|born_in", query)[0].value == "Mofode"


def test_reset_clears_the_index_and_bad_retrieval_is_refused():
    memory = make_memory("temporal-recency", retrieval="lexical")
    facts(memory, [("Doka Letubu|born_in", "Rezobu")])
    assert memory.retrieve("", "Doka Letubu") != []
    memory.reset()
    assert memory.retrieve("", "Doka Letubu") == []
    with pytest.raises(ValueError, match="retrieval must be one of key, lexical"):
        AppendOnly(retrieval="bm25")
    with pytest.raises(ValueError, match="retrieval must be one of"):
        TemporalRecency(retrieval=None)
    assert ReactiveForgetting().retrieval == "key"
