import gymnasium as gym

import tepa_envs  # noqa: F401
from tepa_envs.agents import METHOD_NAMES, MemoryAgent, run_episode


def test_every_method_runs_a_regime_drift_episode():
    env = gym.make("TEPA/RegimeDrift-v0", phase_lengths=(5, 5, 5, 5))
    for name in METHOD_NAMES:
        result = run_episode(env, MemoryAgent(name), seed=3)
        assert result.success.shape == (20,)
        assert list(result.phase) == [0] * 5 + [1] * 5 + [2] * 5 + [3] * 5


def test_reader_hooks_are_declared_not_probed():
    """A reader without hooks is read as is; one subclassing ReaderHooks gets both hooks
    from the loop, and every shipped reader declares them."""
    import gymnasium as gym

    from tepa_envs.agents import MemoryAgent, run_episode
    from tepa_envs.agents.readers import EvidenceReader, LocalLMReader, OpenAIReader, Reader, ReaderHooks

    class Plain:
        def reset(self, episode_seed=None):
            pass

        def choose(self, records, choices, stated=None):
            return choices[0]

    class Watching(EvidenceReader):
        def __init__(self):
            super().__init__()
            self.bound, self.tasks = None, 0

        def bind_memory(self, memory):
            self.bound = memory

        def begin_task(self, info):
            self.tasks += 1

    assert isinstance(Plain(), Reader) and not isinstance(Plain(), ReaderHooks)
    assert all(issubclass(cls, ReaderHooks) for cls in (EvidenceReader, LocalLMReader, OpenAIReader))
    env = gym.make("TEPA/RegimeDrift-v0", phase_lengths=[3, 3, 3, 3])
    run_episode(env, MemoryAgent("tepa", Plain()), 0)
    watching = Watching()
    agent = MemoryAgent("tepa", watching)
    result = run_episode(env, agent, 0)
    env.close()
    assert watching.bound is agent.memory and watching.tasks == len(result.success) == 12
