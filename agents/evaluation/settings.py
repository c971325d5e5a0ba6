"""One settings table keyed by environment id: the reader, per-method arguments,
how an episode is read and scored, and the paper's numbers.

Environment classes carry no benchmark settings; everything the harness, the
CLI and the examples need beyond an environment's own kwargs is here:

* :data:`ENV_SETTINGS`: per environment id, the reader's kwargs (identical for
  every method), any per-method front-end difference (printed beside the
  results), the reading strategy, the phases on which the agent decides, and
  the phase names. Environments not in the table get :class:`EnvSettings`'
  defaults.
* :data:`REPRODUCTIONS`: the paper's tables, each an environment id with kwargs,
  the methods, and the paper's numbers (arXiv 2608.07429; ``PAPER_NUMBERS.md``
  in the project's shared notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.core import PHASE_NAMES
from tepa_envs.core.drift import POISSON_NAMES, RECURRING_NAMES

READINGS: tuple[str, ...] = ("direct", "chain", "question")


@dataclass(frozen=True)
class EnvSettings:
    """How the harness runs agents on one environment id.

    Args:
        reader_kwargs: arguments of :class:`~tepa_envs.agents.readers.EvidenceReader`,
            the same for every method (empty: the reader's documented defaults).
        method_kwargs: constructor arguments per method name; a non-empty entry
            is a per-method front-end difference and is printed with the results.
        reading: ``"direct"`` (retrieve the task's key, the reader picks),
            ``"chain"`` (multi-hop: each hop's answer is the next hop's subject) or
            ``"question"`` (``"chain"``, and unkeyed questions mapped to a key by the reader).
        decide_phases: oracle phases on which the agent decides; on other steps
            it sends the environment's no-decision action ``to_action("")``
            (``None``: every step).
        phase_names: names of the environment's oracle phases, in order.
    """

    reader_kwargs: dict[str, Any] = field(default_factory=dict)
    method_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    reading: str = "direct"
    decide_phases: tuple[int, ...] | None = None
    phase_names: tuple[str, ...] = PHASE_NAMES

    def __post_init__(self) -> None:
        if self.reading not in READINGS:
            raise ValueError(f"reading must be one of {READINGS}, got {self.reading!r}")
        unknown = sorted(set(self.method_kwargs) - set(METHOD_NAMES))
        if unknown:
            raise ValueError(f"method_kwargs names unknown methods: {', '.join(unknown)}")

    def kwargs_for(self, method: object) -> dict[str, Any]:
        """Constructor arguments for ``method`` (a name; objects and import paths get none)."""
        return dict(self.method_kwargs.get(method, {})) if isinstance(method, str) else {}


LEXICAL = {"retrieval": "lexical"}

ENV_SETTINGS: dict[str, EnvSettings] = {
    "TEPA/RegimeDrift-v0": EnvSettings(),
    # Drift scenarios whose phases are not the paper's four (tepa_envs.core.drift.PRESETS).
    "TEPA/RegimeDrift-Recurring-v0": EnvSettings(phase_names=RECURRING_NAMES),
    "TEPA/RegimeDrift-Poisson-v0": EnvSettings(phase_names=POISSON_NAMES),
    "TEPA/FileOps-v0": EnvSettings(),
    "TEPA/PreferenceStream-v0": EnvSettings(),
    "TEPA/FactConsolidation-v0": EnvSettings(
        # One front-end for every method: the environment's fact extraction and the
        # reader's question understanding (reading "question": keyed questions are read
        # hop by hop as "chain", unkeyed ones answered by a chain through the memory,
        # tepa_envs.agents.readers.questions). No per-method arguments: the paper's
        # lexical (BM25) front-end is its own row, FACTS_EXTRA_ROWS.
        reading="question", decide_phases=(1,), phase_names=("memorize", "questions")),
}


def settings_for(env_id: str) -> EnvSettings:
    """The settings of ``env_id`` (defaults for an environment not in the table)."""
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str, got {type(env_id).__name__}")
    return ENV_SETTINGS.get(env_id, EnvSettings())


def front_end_differences(env_id: str, methods: list[str] | tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The methods of a run whose construction differs on ``env_id`` (printed beside results)."""
    settings = settings_for(env_id)
    return {m: settings.kwargs_for(m) for m in methods if settings.kwargs_for(m)}


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
