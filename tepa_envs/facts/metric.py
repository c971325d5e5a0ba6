"""MemoryAgentBench's answer metric: substring exact match after normalisation.

Normalisation (SQuAD-style, as MemoryAgentBench's evaluation code does it):
lower-case, drop ASCII punctuation, drop the articles ``a``/``an``/``the``,
collapse white space. A prediction scores 1.0 when some normalised gold alias
is a substring of the normalised prediction.
"""

from __future__ import annotations

import re
import string
from typing import Sequence

from tepa_envs.core.checks import check_str

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower-case, strip punctuation and articles, collapse white space."""
    text = check_str("answer", text).lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def substring_exact_match(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when a normalised gold alias occurs in the normalised prediction, else 0.0."""
    aliases = [answers] if isinstance(answers, str) else list(answers)
    if not aliases:
        raise ValueError("answers must hold at least one gold alias")
    predicted = normalize_answer(prediction)
    return float(any(normalize_answer(alias) in predicted for alias in aliases))
