"""PettingZoo environments: several agents in one drifting world.

    from tepa_envs.multi_agent import shared_drift_v0

    parallel = shared_drift_v0.parallel_env(n_agents=3, unreliable_agent=2)
    aec = shared_drift_v0.env(n_agents=3)

The environments hold no memory: each agent's ``info["evidence"]`` is its report
of the step. The ``SharedMemory`` wrapper (package ``wrappers``) gives the team
one shared memory or one memory per agent and adds the memory's view to the
observations.
"""

from tepa_envs.multi_agent import shared_drift_v0

__all__ = ["shared_drift_v0"]
