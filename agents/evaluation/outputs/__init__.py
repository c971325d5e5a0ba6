"""Outputs: tables, report files, manifests, plots and the README's generated blocks.

Imports :mod:`~tepa_envs.agents.evaluation.analysis` and
:mod:`~tepa_envs.agents.evaluation.engine`, never the studies or the CLI.
"""
