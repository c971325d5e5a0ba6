"""The engine: typed jobs, the job runner on the one episode loop, the executor (worker
pool, backends), sweep specs and the results store.

Imports only :mod:`~tepa_envs.agents.evaluation.analysis`.
"""
