"""Evaluation: the methods x seeds harness, statistics, settings, reports and ``tepa-bench``."""

from tepa_envs.agents.evaluation.harness import Evaluation, evaluate, summarize

__all__ = ["Evaluation", "evaluate", "summarize"]
