"""One settings table keyed by environment id: the reader, per-method arguments,
how an episode is read and scored, and the names of its phases.

Environment classes carry no benchmark settings; everything the evaluation, the
CLI and the examples need beyond an environment's own kwargs is here.
:data:`ENV_SETTINGS`: per environment id, the reader's kwargs (identical for
every method), any per-method front-end difference (printed beside the
results), the reading strategy, the phases on which the agent decides, and
the phase names. Environments not in the table get :class:`EnvSettings`'
defaults. The engine reads the table once, when it builds its jobs
(:meth:`~tepa_envs.agents.evaluation.engine.jobs.Job.resolve`); the paper's
numbers are in :mod:`~tepa_envs.agents.evaluation.analysis.paper`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.core import PHASE_NAMES
from tepa_envs.core.drift import POISSON_NAMES, RECURRING_NAMES

READINGS: tuple[str, ...] = ("direct", "chain", "question", "question-newest", "question-memory-order",
                             "question-local-lm")


@dataclass(frozen=True)
class EnvSettings:
    """How the engine runs agents on one environment id.

    Args:
        reader_kwargs: arguments of :class:`~tepa_envs.agents.readers.EvidenceReader`,
            the same for every method (empty: the reader's documented defaults).
        method_kwargs: constructor arguments per method name; a non-empty entry
            is a per-method front-end difference and is printed with the results.
        reading: ``"direct"`` (retrieve the task's key, the reader picks),
            ``"chain"`` (multi-hop: each hop's answer is the next hop's subject) or
            ``"question"`` (``"chain"``, and unkeyed questions mapped to a key by the reader;
            each hop takes the memory's first record), or ``"question-<reader>"`` (the same
            with one of the named question readers,
            :data:`~tepa_envs.agents.readers.reading.QUESTION_READERS`).
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


ENV_SETTINGS: dict[str, EnvSettings] = {
    "TEPA/RegimeDrift-v0": EnvSettings(),
    # Drift scenarios whose phases are not the paper's four (tepa_envs.core.drift.PRESETS).
    "TEPA/RegimeDrift-Recurring-v0": EnvSettings(phase_names=RECURRING_NAMES),
    "TEPA/RegimeDrift-Poisson-v0": EnvSettings(phase_names=POISSON_NAMES),
    "TEPA/FileOps-v0": EnvSettings(),
    "TEPA/PreferenceStream-v0": EnvSettings(),
    "TEPA/FactConsolidation-v0": EnvSettings(
        # One front-end for every method: the environment's fact extraction and the
        # reader's question understanding (keyed questions are read hop by hop as
        # "chain", unkeyed ones answered by a chain through the memory,
        # tepa_envs.agents.readers.questions), under the facts table's first question
        # reader, "newest". No per-method arguments: the paper's lexical (BM25)
        # front-end is its own row, analysis.paper.FACTS_EXTRA_ROWS.
        reading="question-newest", decide_phases=(1,), phase_names=("memorize", "questions")),
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


__all__ = ["ENV_SETTINGS", "EnvSettings", "READINGS", "front_end_differences", "settings_for"]
