"""Tianshou as a client (issue 32, item 6): a tiny DQN's collector gathers a few hundred steps
(several episodes, terminal steps included) into a replay buffer with Tianshou's NaN check on,
one gradient update runs, and the ``watch`` idiom (``collect(render=...)``) draws ``human``
frames. The fixed info schema is what keeps the buffer free of NaNs. FactConsolidation runs with
``action_mode="choice"`` (``Discrete`` answers among candidates).

Skipped, with the reason, without ``tianshou`` (the ``clients`` extra)."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import pytest

from tepa_envs.wrappers import FlatObservation, MemoryObservation

pytest.importorskip("tianshou", reason="Tianshou is not installed: pip install 'tepa-envs[clients]'")
import torch  # noqa: E402  (tianshou brings torch)
from tianshou.algorithm import DQN  # noqa: E402
from tianshou.algorithm.algorithm_base import policy_within_training_step  # noqa: E402
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy  # noqa: E402
from tianshou.algorithm.optim import AdamOptimizerFactory  # noqa: E402
from tianshou.data import Collector, VectorReplayBuffer  # noqa: E402
from tianshou.env import DummyVectorEnv  # noqa: E402
from tianshou.utils.net.common import Net  # noqa: E402

FACTS = "TEPA/FactConsolidation-v0"
CASES = [("TEPA/RegimeDrift-v0", None), ("TEPA/RegimeDrift-v0", "tepa"), ("TEPA/FileOps-v0", None),
         ("TEPA/FileOps-v0", "tepa"), ("TEPA/PreferenceStream-v0", None), ("TEPA/PreferenceStream-v0", "tepa"),
         ("TEPA/RegimeDrift-Poisson-v0", "tepa"), (FACTS, None), (FACTS, "tepa")]
ENV_KWARGS: dict[str, dict[str, Any]] = {
    # one memorize step and 100 questions, keyed by the templates so the memory's view points at a candidate
    FACTS: {"length": "6k", "chunk_facts": 455, "action_mode": "choice", "extraction": "templates",
            "generator": "classic"},
}
STEPS = {FACTS: 500}
"""Steps collected per case (default 400): at least two episodes in each of the two environments."""


def factory(env_id: str, memory: str | None, render_mode: str | None = None) -> Callable[[], gym.Env]:
    def make() -> gym.Env:
        kwargs = ENV_KWARGS.get(env_id, {"phase_lengths": (20, 20, 20, 20)})
        env: gym.Env = gym.make(env_id, render_mode=render_mode, **kwargs)
        if memory is not None:
            env = MemoryObservation(env, memory=memory)
        return FlatObservation(env)
    return make


def tiny_dqn(probe: gym.Env) -> DQN:
    torch.manual_seed(0)
    net = Net(state_shape=probe.observation_space.shape, action_shape=int(probe.action_space.n), hidden_sizes=[32])
    policy = DiscreteQLearningPolicy(model=net, action_space=probe.action_space,
                                     observation_space=probe.observation_space, eps_training=0.2)
    return DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=0.9, target_update_freq=20)


@pytest.mark.parametrize("env_id, memory", CASES, ids=[f"{e}-{m}" for e, m in CASES])
def test_a_dqn_collector_gathers_a_few_hundred_steps(env_id, memory):
    make = factory(env_id, memory)
    envs = DummyVectorEnv([make, make])
    envs.seed(0)
    algo = tiny_dqn(make())
    collector = Collector(algo, envs, VectorReplayBuffer(1000, 2), exploration_noise=True,
                          raise_on_nan_in_buffer=True)
    collector.reset()
    n_step = STEPS.get(env_id, 400)
    stats = collector.collect(n_step=n_step)
    assert stats.n_collected_steps == n_step and stats.n_collected_episodes >= 4
    assert {"success", "evidence", "oracle", "t"} <= set(collector.buffer.info.keys())
    with policy_within_training_step(algo.policy):
        algo.update(buffer=collector.buffer, sample_size=32)
    assert collector.collect(n_step=100).n_collected_steps == 100
    envs.close()


def test_watch_renders_human_frames(capsys):
    make = factory("TEPA/RegimeDrift-v0", "tepa", render_mode="human")
    envs = DummyVectorEnv([make])
    collector = Collector(tiny_dqn(make()), envs)
    collector.reset()
    stats = collector.collect(n_episode=1, render=1e-6)
    assert stats.n_collected_episodes == 1
    assert capsys.readouterr().out.strip(), "human mode prints the ansi frame"
    envs.close()
