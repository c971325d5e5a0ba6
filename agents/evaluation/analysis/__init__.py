"""Analysis: statistics, drift metrics, typed results, summaries and the settings tables.

The first room of the evaluation: it imports nothing from the others
(:mod:`~tepa_envs.agents.evaluation.engine`, ``outputs``, ``studies``, ``cli``).
"""
