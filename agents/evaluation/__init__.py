"""Evaluation: the methods x seeds harness, statistics, settings, reports and ``tepa-bench``."""

from tepa_envs.agents.evaluation.harness import Evaluation, evaluate, summarize
from tepa_envs.agents.evaluation.results import SCHEMA_VERSION, Comparison, MethodSummary, PhaseEstimate, Summary
from tepa_envs.agents.evaluation.settings import ENV_SETTINGS, EnvSettings, settings_for

__all__ = ["ENV_SETTINGS", "SCHEMA_VERSION", "Comparison", "EnvSettings", "Evaluation", "MethodSummary",
           "PhaseEstimate", "Summary", "evaluate", "settings_for", "summarize"]
