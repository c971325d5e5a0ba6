"""Studies: the benchmark protocol, ``reproduce``, the suite and FactConsolidation.

Imports :mod:`~tepa_envs.agents.evaluation.analysis`, ``engine`` and ``outputs``; never the CLI.
"""
