"""Lexical retrieval: an incremental BM25 index over short texts, in numpy.

Documents are added one at a time and never rebuilt: postings are kept as
three growing arrays (document, term, term frequency), so a query costs one
vectorised pass over the postings and adding a document costs its own tokens.
Tokens are lower-case alphanumeric runs, as in
:func:`tepa_envs.agents.memories.semantic.tokenize` (not imported from there: semantic
imports the baselines, which import this module).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from tepa_envs.core import check_number, check_positive_int, check_probability, check_str

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric tokens; punctuation and key separators split tokens."""
    return _TOKEN.findall(text.lower())


class BM25Index:
    """Okapi BM25 over the added documents.

    ``score(d, q) = sum over distinct query terms t of
    idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * len(d) / avglen))``
    with ``idf(t) = log(1 + (N - df(t) + 0.5) / (df(t) + 0.5))``.

    Args:
        k1: term-frequency saturation (>= 0).
        b: length normalisation in [0, 1].
    """

    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        if not check_number("k1", k1) >= 0.0:
            raise ValueError(f"k1 must be >= 0, got {k1}")
        self.k1, self.b = float(k1), check_probability("b", b)
        self.clear()

    def clear(self) -> None:
        self._vocabulary: dict[str, int] = {}
        self._df = np.zeros(64, dtype=np.int64)
        self._doc_lengths = np.zeros(64, dtype=np.float64)
        self._post_doc = np.zeros(256, dtype=np.int64)
        self._post_term = np.zeros(256, dtype=np.int64)
        self._post_tf = np.zeros(256, dtype=np.float64)
        self._n_docs = 0
        self._n_postings = 0

    def __len__(self) -> int:
        return self._n_docs

    def add(self, text: str) -> int:
        """Index ``text``; returns its document id (0, 1, 2, ...)."""
        counts = Counter(tokenize(check_str("text", text)))
        doc = self._n_docs
        if doc == len(self._doc_lengths):
            self._doc_lengths = np.concatenate([self._doc_lengths, np.zeros_like(self._doc_lengths)])
        self._doc_lengths[doc] = sum(counts.values())
        terms = [self._term_id(token) for token in counts]
        end = self._n_postings + len(terms)
        while end > len(self._post_doc):
            self._post_doc = np.concatenate([self._post_doc, np.zeros_like(self._post_doc)])
            self._post_term = np.concatenate([self._post_term, np.zeros_like(self._post_term)])
            self._post_tf = np.concatenate([self._post_tf, np.zeros_like(self._post_tf)])
        self._post_doc[self._n_postings:end] = doc
        self._post_term[self._n_postings:end] = terms
        self._post_tf[self._n_postings:end] = list(counts.values())
        self._df[terms] += 1
        self._n_postings = end
        self._n_docs += 1
        return doc

    def _term_id(self, token: str) -> int:
        term = self._vocabulary.get(token)
        if term is None:
            term = self._vocabulary[token] = len(self._vocabulary)
            if term == len(self._df):
                self._df = np.concatenate([self._df, np.zeros_like(self._df)])
        return term

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros when no term matches)."""
        check_str("query", query)
        n = self._n_docs
        terms = sorted({self._vocabulary[t] for t in tokenize(query) if t in self._vocabulary})
        if n == 0 or not terms:
            return np.zeros(n, dtype=np.float64)
        df = self._df[terms].astype(np.float64)
        idf = np.zeros(len(self._vocabulary), dtype=np.float64)
        idf[terms] = np.log1p((n - df + 0.5) / (df + 0.5))
        post_term = self._post_term[: self._n_postings]
        hit = np.flatnonzero(idf[post_term] > 0.0)
        docs, tf = self._post_doc[hit], self._post_tf[hit]
        lengths = self._doc_lengths[:n]
        norm = self.k1 * (1.0 - self.b + self.b * lengths[docs] / lengths.mean())
        weights = idf[post_term[hit]] * tf * (self.k1 + 1.0) / (tf + norm)
        return np.bincount(docs, weights=weights, minlength=n)

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """At most ``k`` documents with a positive score, best first; ties keep the
        whole tied group (so a caller can break ties), ordered by document id."""
        check_positive_int("k", k)
        scores = np.round(self.scores(query), 9)
        positive = np.flatnonzero(scores > 0.0)
        if positive.size > k:
            threshold = np.partition(scores[positive], positive.size - k)[positive.size - k]
            positive = positive[scores[positive] >= threshold]
        order = np.lexsort((positive, -scores[positive]))
        return [(int(positive[i]), float(scores[positive[i]])) for i in order]
