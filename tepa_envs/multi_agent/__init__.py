"""PettingZoo environments: several agents in one drifting world, with shared or private memory.

    from tepa_envs.multi_agent import shared_drift_v0

    parallel = shared_drift_v0.parallel_env(memory="tepa", shared_memory=True)
    aec = shared_drift_v0.env(memory="tepa", shared_memory=False)
"""

from tepa_envs.multi_agent import shared_drift_v0

__all__ = ["shared_drift_v0"]
