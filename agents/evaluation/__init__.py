"""Evaluation: the methods x seeds engine, statistics, settings, reports and ``tepa-bench``.

Five rooms, each importing only the rooms before it (``tests/agents/evaluation/test_rooms.py``):

* :mod:`~tepa_envs.agents.evaluation.analysis`: statistics, drift metrics, typed results,
  summaries, the settings table and the paper's numbers;
* :mod:`~tepa_envs.agents.evaluation.engine`: typed jobs, the job runner on the one episode
  loop, the executor (pool, backends), sweep specs and the results store;
* :mod:`~tepa_envs.agents.evaluation.outputs`: tables, report files, manifests, plots, README blocks;
* :mod:`~tepa_envs.agents.evaluation.studies`: the protocol, ``reproduce``, the suite, FactConsolidation;
* :mod:`~tepa_envs.agents.evaluation.cli`: ``tepa-bench``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tepa_envs.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation
    from tepa_envs.agents.evaluation.analysis.results import SCHEMA_VERSION, Comparison, MethodSummary, PhaseEstimate, Summary
    from tepa_envs.agents.evaluation.analysis.settings import ENV_SETTINGS, EnvSettings, settings_for
    from tepa_envs.agents.evaluation.analysis.summary import summarize
    from tepa_envs.agents.evaluation.engine.evaluate import evaluate

_LAZY: dict[str, str] = {
    "Evaluation": "tepa_envs.agents.evaluation.analysis.evaluation",
    "SCHEMA_VERSION": "tepa_envs.agents.evaluation.analysis.results",
    "Comparison": "tepa_envs.agents.evaluation.analysis.results",
    "MethodSummary": "tepa_envs.agents.evaluation.analysis.results",
    "PhaseEstimate": "tepa_envs.agents.evaluation.analysis.results",
    "Summary": "tepa_envs.agents.evaluation.analysis.results",
    "ENV_SETTINGS": "tepa_envs.agents.evaluation.analysis.settings",
    "EnvSettings": "tepa_envs.agents.evaluation.analysis.settings",
    "settings_for": "tepa_envs.agents.evaluation.analysis.settings",
    "summarize": "tepa_envs.agents.evaluation.analysis.summary",
    "evaluate": "tepa_envs.agents.evaluation.engine.evaluate",
}
"""Public name -> the module it is loaded from (on first use)."""
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())

__all__ = ["ENV_SETTINGS", "SCHEMA_VERSION", "Comparison", "EnvSettings", "Evaluation", "MethodSummary",
           "PhaseEstimate", "Summary", "evaluate", "settings_for", "summarize"]
