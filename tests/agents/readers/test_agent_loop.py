import gymnasium as gym

import tepa_envs  # noqa: F401
from tepa_envs.agents import METHOD_NAMES, MemoryAgent, run_episode


def test_every_method_runs_a_regime_drift_episode():
    env = gym.make("TEPA/RegimeDrift-v0", phase_lengths=(5, 5, 5, 5))
    for name in METHOD_NAMES:
        result = run_episode(env, MemoryAgent(name), seed=3)
        assert result.success.shape == (20,)
        assert list(result.phase) == [0] * 5 + [1] * 5 + [2] * 5 + [3] * 5
