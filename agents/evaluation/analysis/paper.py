"""The paper's tables: what each reproduction runs and the numbers it is read beside.

:data:`SETTINGS` holds the reproductions (``controlled``, ``executable``,
``preference``), each an environment id with kwargs, the methods, and the
paper's numbers (arXiv 2608.07429; ``PAPER_NUMBERS.md`` in the project's shared
notes); the key-noise study and the FactConsolidation table have theirs beside
them. How the engine runs an environment is
:mod:`~tepa_envs.agents.evaluation.analysis.settings`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tepa_envs.agents.memories.registry import METHOD_NAMES

LEXICAL = {"retrieval": "lexical"}
FACTS_ENV_ID = "TEPA/FactConsolidation-v0"
"""The environment of the FactConsolidation table."""


@dataclass(frozen=True)
class Setting:
    """One reproduction: an environment, its kwargs, the methods, and the paper's numbers."""

    name: str
    env_id: str
    description: str
    focus_phase: str = "full_reversal"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    methods: tuple[str, ...] = METHOD_NAMES
    paper: dict[str, dict[str, float]] = field(default_factory=dict)  # method -> phase -> success
    paper_diffs: dict[tuple[str, str, str], tuple[float, float, float]] = field(default_factory=dict)


SETTINGS: dict[str, Setting] = {
    "controlled": Setting(
        "controlled", "TEPA/RegimeDrift-v0", "controlled drift: a tool regime reverses",
        paper={
            "append-only": {"full_reversal": 0.210},
            "lww": {"full_reversal": 0.210},
            "no-memory": {"full_reversal": 0.309},
            "tepa": {"full_reversal": 0.950},
            "conflict-aware-recency": {"full_reversal": 0.210},
        },
        paper_diffs={
            ("tepa", "append-only", "full_reversal"): (0.740, 0.722, 0.756),
            ("tepa", "append-only", "overall"): (0.167, 0.162, 0.172),
            ("no-memory", "append-only", "full_reversal"): (0.098, 0.085, 0.112),
        },
    ),
    "executable": Setting(
        "executable", "TEPA/FileOps-v0", "executable drift: real CSV/JSON files, the accepted CSV writer changes",
        paper={
            "append-only": {"full_reversal": 0.203},
            "lww": {"full_reversal": 0.203},
            "no-memory": {"full_reversal": 0.298},
            "tepa": {"full_reversal": 0.950},
            "reactive-forgetting": {"full_reversal": 0.771},
        },
        paper_diffs={("tepa", "append-only", "full_reversal"): (0.748, 0.728, 0.768)},
    ),
    "preference": Setting(
        "preference", "TEPA/PreferenceStream-v0", "preference stream: drifting user preferences among transient noise",
        focus_phase="overall",
        paper={
            "append-only": {"full_reversal": 0.138, "overall": 0.68},
            "no-memory": {"full_reversal": 0.837, "overall": 0.908},
            "tepa-full": {"full_reversal": 0.872, "overall": 0.910},
            "oracle-reset": {"overall": 0.865},
            "lww-validation": {"overall": 0.863},
            "tepa": {"overall": 0.852},
            "lww": {"overall": 0.686},
            "semantic-retrieval": {"overall": 0.676},
            "tepa-norev": {"overall": 0.68},
        },
    ),
}

KEY_NOISE_LEVELS: tuple[float, ...] = (0.0, 0.05, 0.10, 0.20)
KEY_NOISE_METHODS: tuple[str, ...] = ("tepa", "reactive-forgetting", "lww", "append-only")
KEY_NOISE_PAPER: dict[str, tuple[float | None, ...]] = {
    "tepa": (0.950, 0.908, 0.886, 0.777),
    "reactive-forgetting": (0.796, None, None, 0.613),
    "lww": (0.21, 0.21, 0.21, 0.21),
    "append-only": (0.21, 0.21, 0.21, 0.21),
}

# FactConsolidation (substring exact match), per (split, length) of TEPA/FactConsolidation-v0.
FACTS_METHODS: tuple[str, ...] = ("tepa", "lww", "tepa-norev", "append-only", "temporal-recency")
FACTS_EXTRA_ROWS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("append-only-bm25", "append-only", LEXICAL),
)
"""Rows with a method-specific front-end, each under its own name: (label, method, kwargs).
``append-only-bm25`` is append-only retrieving the lexical BM25 top-k of the stored
facts for the question, the paper's front-end for its append-only baseline."""
PAPER_FACTS: dict[tuple[str, str], dict[str, float]] = {
    ("sh", "6k"): {"tepa": 0.890, "lww": 0.890, "tepa-norev": 0.630, "append-only": 0.583,
                   "append-only-bm25": 0.583},
    ("sh", "32k"): {"tepa": 0.680},
    ("mh", "6k"): {"tepa": 0.040, "temporal-recency": 0.070, "append-only": 0.080, "append-only-bm25": 0.080},
    ("sh", "262k"): {"tepa": 0.000, "tepa-norev": 0.000, "append-only": 0.350, "append-only-bm25": 0.350},
}

REPRODUCIBLE: tuple[str, ...] = ("controlled", "executable", "preference", "facts")


__all__ = ["FACTS_ENV_ID", "FACTS_EXTRA_ROWS", "FACTS_METHODS", "KEY_NOISE_LEVELS", "KEY_NOISE_METHODS",
           "KEY_NOISE_PAPER", "LEXICAL", "PAPER_FACTS", "REPRODUCIBLE", "SETTINGS", "Setting"]
