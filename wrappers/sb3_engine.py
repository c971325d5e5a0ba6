"""The RL study's ``sb3`` engine (``tepa-bench rl --engine sb3``, the default).

**The engine.** :class:`SB3Engine` is loaded by
:func:`~tepa_envs.agents.evaluation.studies.rl_agents.load_engine` in every process
that trains (it needs the ``rl`` extra). It lives in the wrappers room, not under
``agents/``, because it wraps environments with :mod:`tepa_envs.wrappers`, which no
module under ``agents/`` may import (``tests/test_layout.py``); nothing imports it
but the engine loader, so importing :mod:`tepa_envs.wrappers` loads neither torch
nor Stable-Baselines3. Every agent's policy sees one flat ``Box`` observation
(:class:`~tepa_envs.wrappers.FlatObservation`: one-hots of the environment's
observation, then the memory's view) through an ``MlpPolicy`` (``MlpLstmPolicy``
for ``recurrent-ppo``), so agents differ only in what they observe and, for the
LSTM, in the policy's own recurrent state.

**Training paths.** On a RegimeDrift scenario (an environment with a native vector
env) whose memory is one of :data:`~tepa_envs.wrappers.BATCHED_MEMORIES` (or none),
training runs through ``SB3VecEnv(FlatObservationV(MemoryObservationV(gym.make_vec(...))))``,
the batched fast path; otherwise through ``DummyVecEnv`` of
``FlatObservation(MemoryObservation(gym.make(...)))``. Both give the policy the same
observations for the same seeds and actions (``tests/wrappers/test_vector_memory.py``),
so the path changes speed, not results. Evaluation always runs the single
environments (``DummyVecEnv``, one held-out episode per sub-environment) because it
reads every step's ``success`` and oracle phase from the info.

**Time split.** :class:`TimedEnv` (each single environment) or :class:`TimedVectorEnv`
(the native vector env) counts the seconds spent in environment and memory steps,
inside Stable-Baselines3's ``VecEnv`` adaptor (the same boundary as the ``rllib``
engine's, so env+memory steps/s mean the same under both); a callback counts rollout
collection (environment plus the policy's forward passes and the adaptors), the
gradient updates between rollouts, and the checkpoint evaluations, which it runs at
the start of a rollout.
"""

from __future__ import annotations

import importlib
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecFrameStack

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents.evaluation.studies.rl_agents import (
    SEED_STRIDE, AgentSpec, Evaluation, TrainJob, TrainResult,
)
from tepa_envs.core.step_info import is_scored
from tepa_envs.wrappers import BATCHED_MEMORIES, FlatObservation, FlatObservationV, MemoryObservation, MemoryObservationV
from tepa_envs.wrappers.engine_timing import Clock, TimedEnv, TimedVectorEnv, library_versions
from tepa_envs.wrappers.sb3 import SB3VecEnv

LIBRARIES: tuple[str, ...] = ("torch", "stable-baselines3", "sb3-contrib", "gymnasium", "numpy")





def recurrent_ppo() -> type[BaseAlgorithm] | None:
    """sb3-contrib's ``RecurrentPPO``, or ``None`` when sb3-contrib is not installed."""
    try:
        from sb3_contrib import RecurrentPPO
    except ImportError:
        return None
    return RecurrentPPO


def algorithm_class(agent: AgentSpec) -> type[BaseAlgorithm]:
    """The Stable-Baselines3 class of ``agent``'s algorithm."""
    if agent.algorithm == "ppo":
        return PPO
    if agent.algorithm == "recurrent-ppo":
        found = recurrent_ppo()
        if found is None:
            raise ValueError("recurrent-ppo needs sb3-contrib: pip install 'tepa-envs[rl]'")
        return found
    cls = import_path(agent.algorithm)
    if not (isinstance(cls, type) and issubclass(cls, BaseAlgorithm)):
        raise TypeError(f"{agent.algorithm!r} is not a Stable-Baselines3 BaseAlgorithm subclass")
    return cls


def import_path(path: str) -> Any:
    """The object ``package.module:Name`` names; ``ValueError`` when it cannot be imported."""
    module_name, _, attr = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot import {path!r}: {exc}") from None
    return target


def native_path(job: TrainJob) -> bool:
    """Whether ``job`` trains through the batched vector env (see the module docstring)."""
    memory = job.agent.memory
    env_id, _ = job.target_env()
    return (job.fast_path and gym.spec(env_id).vector_entry_point is not None
            and (memory is None or memory in BATCHED_MEMORIES))


def single_env(job: TrainJob) -> Callable[[], gym.Env]:
    """A factory of one training or evaluation environment of ``job``'s agent (flat observation;
    the fully observed twin for the twin agent)."""
    memory = job.agent.memory
    env_id, kwargs = job.target_env()

    def make() -> gym.Env:
        env = gym.make(env_id, **kwargs)
        if memory is not None:
            env = MemoryObservation(env, memory)
        return FlatObservation(env)

    return make


def training_env(job: TrainJob) -> tuple[VecEnv, Clock, str]:
    """The training ``VecEnv`` (frames stacked when asked), the clock of its environment and
    memory calls, and the path's name."""
    n_envs = job.hyper.n_envs
    clock = Clock()
    core: VecEnv
    if native_path(job):
        env_id, kwargs = job.target_env()
        vec = gym.make_vec(env_id, num_envs=n_envs, vectorization_mode="vector_entry_point", **kwargs)
        if job.agent.memory is not None:
            vec = MemoryObservationV(vec, memory=job.agent.memory)
        core, path = SB3VecEnv(TimedVectorEnv(FlatObservationV(vec), clock)), "native"
    else:
        make = single_env(job)
        core, path = DummyVecEnv([lambda: TimedEnv(make(), clock)] * n_envs), "python"
    venv: VecEnv = VecFrameStack(core, job.agent.frame_stack) if job.agent.frame_stack > 1 else core
    return venv, clock, path


def evaluation_env(job: TrainJob, n_episodes: int) -> VecEnv:
    """``n_episodes`` single environments (seeded by :func:`evaluate_policy`)."""
    venv: VecEnv = DummyVecEnv([single_env(job)] * n_episodes)
    if job.agent.frame_stack > 1:
        venv = VecFrameStack(venv, job.agent.frame_stack)
    return venv


def evaluate_policy(model: BaseAlgorithm, job: TrainJob, n_episodes: int, step: int) -> Evaluation:
    """One greedy episode on each of the first ``n_episodes`` held-out seeds, all stepped together."""
    start = time.perf_counter()
    venv = evaluation_env(job, n_episodes)
    seeds = job.eval_seeds[:n_episodes]  # consecutive: DummyVecEnv seeds sub-environment i with seeds[0] + i
    inner = venv.venv if isinstance(venv, VecFrameStack) else venv
    venv.seed(int(seeds[0]))
    observations = venv.reset()
    infos = [dict(info) for info in inner.reset_infos]
    success: list[list[bool]] = [[] for _ in seeds]
    phase: list[list[int]] = [[] for _ in seeds]
    running = np.ones(len(seeds), dtype=bool)
    state: Any = None
    starts = np.ones(len(seeds), dtype=bool)
    while running.any():
        if isinstance(observations, tuple):
            raise TypeError("the study's policies take one flat observation, not a tuple")
        actions, state = model.predict(observations, state=state, episode_start=starts, deterministic=True)
        observations, _, dones, step_infos = venv.step(actions)
        for i in np.flatnonzero(running):
            after = step_infos[i]
            if is_scored(after):
                success[i].append(bool(after["success"]))
                phase[i].append(int(infos[i].get("oracle", {}).get("phase", 0)))
            infos[i] = after
            if dones[i]:
                running[i] = False
        starts = np.asarray(dones, dtype=bool)
    venv.close()
    return Evaluation(step, success, phase, time.perf_counter() - start)


class _Checkpoints(BaseCallback):
    """Evaluates at the start of the first rollout past each checkpoint and times the phases of learning."""

    def __init__(self, job: TrainJob) -> None:
        super().__init__()
        self.job = job
        self.marks = [job.timesteps * j // job.checkpoints for j in range(job.checkpoints)]
        self.curve: list[Evaluation] = []
        self.rollout_s = self.update_s = self.eval_s = 0.0
        self._rollout_start = 0.0
        self._rollout_end: float | None = None

    def _on_rollout_start(self) -> None:
        now = time.perf_counter()
        if self._rollout_end is not None:
            self.update_s += now - self._rollout_end
        if self.marks and self.num_timesteps >= self.marks[0]:
            while self.marks and self.num_timesteps >= self.marks[0]:
                self.marks.pop(0)
            evaluation = evaluate_policy(self.model, self.job, self.job.curve_episodes, self.num_timesteps)
            self.curve.append(evaluation)
            self.eval_s += evaluation.wall_s
        self._rollout_start = time.perf_counter()

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self._rollout_end = time.perf_counter()
        self.rollout_s += self._rollout_end - self._rollout_start

    def finish(self) -> None:
        """Count the update after the last rollout (``learn`` returns right after it)."""
        if self._rollout_end is not None:
            self.update_s += time.perf_counter() - self._rollout_end
            self._rollout_end = None


class SB3Engine:
    """The ``sb3`` engine (see the module docstring)."""

    name = "sb3"
    uses_ray = False

    def missing(self, agent: AgentSpec) -> str | None:
        if agent.algorithm == "recurrent-ppo" and recurrent_ppo() is None:
            return "recurrent-ppo needs sb3-contrib (pip install 'tepa-envs[rl]')"
        return None

    def check(self, agent: AgentSpec, env_id: str, env_kwargs: dict[str, Any]) -> None:
        if agent.algorithm not in ("ppo", "recurrent-ppo"):
            algorithm_class(agent)
        job = TrainJob(self.name, env_id, env_kwargs, agent, 0, 1, 1, (0,), 1)
        single_env(job)().close()

    def train(self, job: TrainJob) -> TrainResult:
        torch.set_num_threads(1)
        started = time.perf_counter()
        hyper = job.hyper
        # PPO-style keyword arguments (n_steps, batch_size, n_epochs): a BaseAlgorithm's own signature lacks them
        cls: Callable[..., BaseAlgorithm] = algorithm_class(job.agent)
        venv, clock, path = training_env(job)
        policy_kwargs: dict[str, Any] = {"net_arch": list(hyper.net_arch)}
        policy = "MlpPolicy"
        if job.agent.algorithm == "recurrent-ppo":
            policy = "MlpLstmPolicy"
            policy_kwargs["lstm_hidden_size"] = hyper.lstm_hidden_size
        model = cls(policy, venv, n_steps=hyper.n_steps, batch_size=hyper.batch_size, n_epochs=hyper.n_epochs,
                    learning_rate=hyper.learning_rate, gamma=hyper.gamma, ent_coef=hyper.ent_coef,
                    policy_kwargs=policy_kwargs, seed=job.train_seed, device="cpu", verbose=0)
        venv.seed(job.train_seed * SEED_STRIDE)  # after the model's own env.seed(train_seed)
        callback = _Checkpoints(job)
        clock.seconds = 0.0
        model.learn(total_timesteps=job.timesteps, callback=callback)
        callback.finish()
        env_s = clock.seconds
        final = evaluate_policy(model, job, len(job.eval_seeds), int(model.num_timesteps))
        venv.close()
        total = time.perf_counter() - started
        timing = {"env_s": env_s, "policy_s": max(callback.rollout_s - env_s, 0.0), "update_s": callback.update_s,
                  "eval_s": callback.eval_s + final.wall_s, "total_s": total}
        return TrainResult(callback.curve, final, int(model.num_timesteps), timing, path, library_versions(LIBRARIES))


__all__ = ["LIBRARIES", "Clock", "SB3Engine", "TimedEnv", "TimedVectorEnv", "algorithm_class", "evaluate_policy", "library_versions",
           "native_path", "training_env"]
