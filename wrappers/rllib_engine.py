"""The RL study's ``rllib`` engine (``tepa-bench rl --engine rllib``): the study's agents on Ray RLlib.

**The engine.** :class:`RLlibEngine` is loaded by
:func:`~tepa_envs.agents.evaluation.studies.rl_agents.load_engine` in every process
that trains (it needs ``ray[rllib]``, the ``clients`` extra). Like the ``sb3`` engine
it lives in the wrappers room because it wraps environments with
:mod:`tepa_envs.wrappers`. Its units run as Ray tasks (:attr:`RLlibEngine.uses_ray`),
one CPU each, on a local Ray (``ray.init(num_cpus=workers, include_dashboard=False)``)
or on the cluster at ``--address``; inside a unit RLlib builds its algorithm with no
remote actor (``num_env_runners=0``, ``num_learners=0``): the unit samples, learns and
is evaluated in its own task, so units are independent and a cluster runs as many
at once as it has CPUs.

**Agents.** RLlib's PPO (the new API stack, torch) for ``ppo``, ``ppo+MEMORY``,
``ppo-framestack`` and the twin agent; ``recurrent-ppo`` is RLlib's PPO with its
default LSTM model (``use_lstm=True``). An algorithm given by import path (a
Stable-Baselines3 class) is refused. Every agent observes exactly what it observes
under the ``sb3`` engine: ``FlatObservation(MemoryObservation(gym.make(...)))`` (or the
native vector env with the batched memory), the frames stacked by the environment
(Gymnasium's ``FrameStackObservation`` with zero padding, flattened: the layout of
SB3's ``VecFrameStack``), the twin agent on the environment's ``-MDP`` twin
(:meth:`~tepa_envs.agents.evaluation.studies.rl_agents.TrainJob.target_env`).

**Seeds.** The algorithm's seed is ``train_seed * SEED_STRIDE``; RLlib seeds the first
reset of the local runner's sub-environment ``i`` with that seed ``+ i``, so training
sub-environment ``i`` is seeded ``train_seed * 1000 + i`` as under ``sb3``. The
creator here (:class:`StudyEnvCreator`) does not reseed as
:class:`~tepa_envs.wrappers.rllib.RunnerSeeding` does: with one local runner there is
no stream to keep apart.

**Evaluation.** The same held-out episodes as under ``sb3``: one episode on each held-out
seed, the greedy action (the arg-max of the policy's logits, RLlib's
``forward_inference``), the success of every scored step and the oracle phase of the
task it answered (:func:`evaluate_module`).

**Time split.** :class:`~tepa_envs.wrappers.engine_timing.TimedEnv` / :class:`~tepa_envs.wrappers.engine_timing.TimedVectorEnv` count the seconds spent in
environment and memory steps; an ``on_sample_end`` callback marks the end of each
``sample()``, so an iteration's time before it is rollout collection (environment plus
the policy's forward passes and RLlib's connectors) and the time after it is the
learner's update (with RLlib's weight sync and metrics).
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Mapping

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import VectorEnv

try:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.tune.registry import register_env
except ImportError as exc:  # pragma: no cover - exercised only without ray[rllib]
    from tepa_envs.error import DependencyNotInstalled

    raise DependencyNotInstalled("the rllib engine needs Ray RLlib: pip install 'tepa-envs[clients]'") from exc

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents.evaluation.studies.rl_agents import (
    ALGORITHMS, SEED_STRIDE, AgentSpec, Evaluation, Hyper, TrainJob, TrainResult,
)
from tepa_envs.core.step_info import is_scored
from tepa_envs.wrappers.engine_timing import Clock, TimedEnv, TimedVectorEnv, library_versions
from tepa_envs.wrappers import (
    BATCHED_MEMORIES, FlatObservation, FlatObservationV, MemoryObservation, MemoryObservationV,
)

LIBRARIES: tuple[str, ...] = ("torch", "ray", "gymnasium", "numpy")
QUIET_LOGGERS: tuple[str, ...] = ("ray.rllib", "ray.tune", "ray.util")
"""Loggers held at ``ERROR`` while a unit trains."""
SB3_DEFAULTS: dict[str, Any] = {"lambda_": 0.95, "clip_param": 0.2, "vf_loss_coeff": 0.5, "grad_clip": 0.5}
"""PPO settings the study leaves at Stable-Baselines3's defaults (``gae_lambda``, ``clip_range``,
``vf_coef``, ``max_grad_norm``), set to the same values here (RLlib's own defaults differ)."""


# ----------------------------------------------------------------------------- environments
UNIT_CLOCK = Clock()
"""The clock of the unit this process trains (one at a time: a Ray task, or the process that
calls ``train``); RLlib builds the environments, so they find it here."""


def native_path(job: TrainJob) -> bool:
    """Whether ``job`` trains through the batched vector env: as under ``sb3``, except that a
    frame-stacking agent takes the per-environment path (Gymnasium has no vector frame stack)."""
    env_id, _ = job.target_env()
    memory = job.agent.memory
    return (job.fast_path and job.agent.frame_stack == 1 and gym.spec(env_id).vector_entry_point is not None
            and (memory is None or memory in BATCHED_MEMORIES))


def single_env(job: TrainJob) -> gym.Env:
    """One training or evaluation environment of ``job``'s agent: the flat observation of
    ``MemoryObservation`` (with a memory), frames stacked as SB3's ``VecFrameStack`` stacks them."""
    env_id, kwargs = job.target_env()
    env: gym.Env = gym.make(env_id, **kwargs)
    if job.agent.memory is not None:
        env = MemoryObservation(env, job.agent.memory)
    env = FlatObservation(env)
    if job.agent.frame_stack > 1:
        stacked = gym.wrappers.FrameStackObservation(env, job.agent.frame_stack, padding_type="zero")
        env = gym.wrappers.FlattenObservation(stacked)
    return env


class StudyEnvCreator:
    """RLlib's env creator for one unit (registered under :meth:`name`): the timed single
    environment, or the timed native vector env with the batched memory when RLlib asks for
    ``num_envs`` (``gym_env_vectorize_mode="vector_entry_point"``). Picklable."""

    def __init__(self, job: TrainJob) -> None:
        self.job = job

    def name(self) -> str:
        """The name it is registered under: the unit's agent, environment and training seed."""
        return f"tepa-rl-study/{self.job.agent.label}/{self.job.env_id}/{self.job.train_seed}"

    def register(self) -> str:
        """Register with ``ray.tune.registry.register_env`` (RLlib takes an env as a class or a
        registered name); the name."""
        register_env(self.name(), self)
        return self.name()

    def __call__(self, config: Mapping[str, Any]) -> Any:
        num_envs = config.get("num_envs")
        if num_envs is None:
            return TimedEnv(single_env(self.job), UNIT_CLOCK)
        env_id, kwargs = self.job.target_env()
        venv: VectorEnv = gym.make_vec(env_id, num_envs=int(num_envs), vectorization_mode="vector_entry_point",
                                       **kwargs)
        if self.job.agent.memory is not None:
            venv = MemoryObservationV(venv, memory=self.job.agent.memory)
        return TimedVectorEnv(FlatObservationV(venv), UNIT_CLOCK)


# ----------------------------------------------------------------------------- the algorithm
def _mark_sample_end(**kwargs: Any) -> None:
    UNIT_CLOCK.sample_end = time.perf_counter()


def model_config(agent: AgentSpec, hyper: Hyper) -> DefaultModelConfig:
    """The policy and value networks: ``hyper.net_arch`` tanh layers, separate for the policy and
    the value (SB3's ``MlpPolicy``); for ``recurrent-ppo`` RLlib's LSTM (``lstm_hidden_size``
    cells) after those layers, one for the policy and one for the value (sb3-contrib's
    ``MlpLstmPolicy`` puts the LSTM first: docs/rl.md), its gradients through
    ``hyper.n_steps`` steps (``max_seq_len``)."""
    common: dict[str, Any] = {"fcnet_hiddens": list(hyper.net_arch), "fcnet_activation": "tanh",
                              "head_fcnet_hiddens": [], "vf_share_layers": False}
    if agent.algorithm == "recurrent-ppo":
        return DefaultModelConfig(**common, use_lstm=True, lstm_cell_size=hyper.lstm_hidden_size,
                                  max_seq_len=hyper.n_steps)
    return DefaultModelConfig(**common)


def algorithm_config(job: TrainJob) -> PPOConfig:
    """RLlib's PPO for ``job``: the study's settings (``hyper``) and SB3's PPO defaults for the
    rest (:data:`SB3_DEFAULTS`, no KL penalty, no value clipping); every remaining difference is
    listed in docs/rl.md."""
    hyper = job.hyper
    native = native_path(job)
    return (PPOConfig()
            .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
            .framework("torch")
            .environment(env=StudyEnvCreator(job).register())
            .env_runners(num_env_runners=0, num_envs_per_env_runner=hyper.n_envs,
                         rollout_fragment_length=hyper.n_steps,
                         gym_env_vectorize_mode="vector_entry_point" if native else "sync")
            .learners(num_learners=0)
            .training(train_batch_size_per_learner=hyper.n_envs * hyper.n_steps, minibatch_size=hyper.batch_size,
                      num_epochs=hyper.n_epochs, lr=hyper.learning_rate, gamma=hyper.gamma,
                      entropy_coeff=hyper.ent_coef, use_kl_loss=False, vf_clip_param=float("inf"),
                      **SB3_DEFAULTS)
            .rl_module(model_config=model_config(job.agent, hyper))
            .callbacks(on_sample_end=_mark_sample_end)
            .reporting(metrics_num_episodes_for_smoothing=1)
            .debugging(seed=job.train_seed * SEED_STRIDE, log_level="ERROR"))


# ----------------------------------------------------------------------------- evaluation
def greedy_actions(module: Any, observations: np.ndarray, state: Any) -> tuple[np.ndarray, Any]:
    """The arg-max action of ``module`` for a batch of flat observations (and the LSTM's next state)."""
    batch: dict[str, Any] = {"obs": torch.as_tensor(observations, dtype=torch.float32)}
    if state is not None:
        batch["obs"] = batch["obs"][:, None]  # one time step
        batch["state_in"] = state
    with torch.no_grad():
        out = module.forward_inference(batch)
    logits = out["action_dist_inputs"]
    if state is not None:
        logits = logits[:, 0]
        state = out["state_out"]
    return logits.argmax(dim=-1).numpy(), state


def initial_state(module: Any, n: int) -> Any:
    """The LSTM's initial state for ``n`` episodes, or ``None`` for a feed-forward module."""
    if not module.is_stateful():
        return None

    def batched(state: Any) -> Any:
        if isinstance(state, Mapping):
            return {key: batched(value) for key, value in state.items()}
        tensor = torch.as_tensor(state)
        return tensor[None].repeat(n, *([1] * tensor.dim()))

    return batched(module.get_initial_state())


def evaluate_module(module: Any, job: TrainJob, n_episodes: int, step: int) -> Evaluation:
    """One greedy episode on each of the first ``n_episodes`` held-out seeds, all stepped together
    (the held-out episodes and records of the ``sb3`` engine's ``evaluate_policy``)."""
    start = time.perf_counter()
    seeds = job.eval_seeds[:n_episodes]
    envs = [single_env(job) for _ in seeds]
    first = [env.reset(seed=int(seed)) for env, seed in zip(envs, seeds)]
    observations = np.stack([obs for obs, _ in first])
    infos = [dict(info) for _, info in first]
    success: list[list[bool]] = [[] for _ in seeds]
    phase: list[list[int]] = [[] for _ in seeds]
    running = np.ones(len(seeds), dtype=bool)
    state = initial_state(module, len(seeds))
    was_training = module.training
    module.eval()
    try:
        while running.any():
            actions, state = greedy_actions(module, observations, state)
            for i in np.flatnonzero(running):
                obs, _, terminated, truncated, after = envs[i].step(int(actions[i]))
                if is_scored(after):
                    success[i].append(bool(after["success"]))
                    phase[i].append(int(infos[i].get("oracle", {}).get("phase", 0)))
                infos[i] = after
                observations[i] = obs
                if terminated or truncated:
                    running[i] = False
    finally:
        module.train(was_training)
        for env in envs:
            env.close()
    return Evaluation(step, success, phase, time.perf_counter() - start)


# ----------------------------------------------------------------------------- the engine
class RLlibEngine:
    """The ``rllib`` engine (see the module docstring)."""

    name = "rllib"
    uses_ray = True

    def missing(self, agent: AgentSpec) -> str | None:
        if agent.algorithm not in ALGORITHMS:
            return (f"the rllib engine runs PPO (ppo, ppo-framestack, ppo+MEMORY, the twin agent) and "
                    f"RLlib's LSTM PPO (recurrent-ppo) only, not algorithm {agent.algorithm!r} "
                    "(a Stable-Baselines3 class: use engine sb3)")
        return None

    def check(self, agent: AgentSpec, env_id: str, env_kwargs: dict[str, Any]) -> None:
        reason = self.missing(agent)
        if reason:
            raise ValueError(reason)
        job = TrainJob(self.name, env_id, env_kwargs, agent, 0, 1, 1, (0,), 1)
        env = single_env(job)
        space = env.action_space
        env.close()
        if not isinstance(space, gym.spaces.Discrete):
            raise ValueError(f"{env_id}: the study's PPO takes a Discrete action space, got {space}")

    def train(self, job: TrainJob) -> TrainResult:
        torch.set_num_threads(1)
        for name in QUIET_LOGGERS:  # RLlib's notices (new API stack, setup time, gputil) on every unit
            logging.getLogger(name).setLevel(logging.ERROR)
        started = time.perf_counter()
        with warnings.catch_warnings():  # RLlib registers its env id again at every build
            warnings.filterwarnings("ignore", message=".*Overriding environment rllib-single-agent-env")
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            algo = algorithm_config(job).build_algo()
        marks = [job.timesteps * j // job.checkpoints for j in range(job.checkpoints)]
        curve: list[Evaluation] = []
        steps, sample_s, update_s, eval_s = 0, 0.0, 0.0, 0.0
        try:
            module = algo.get_module()
            UNIT_CLOCK.restart()
            while steps < job.timesteps:
                if marks and steps >= marks[0]:  # the start of the first rollout past a checkpoint
                    while marks and steps >= marks[0]:
                        marks.pop(0)
                    evaluation = evaluate_module(module, job, job.curve_episodes, steps)
                    curve.append(evaluation)
                    eval_s += evaluation.wall_s
                begin = time.perf_counter()
                result = algo.train()
                end = time.perf_counter()
                sample_end = min(max(UNIT_CLOCK.sample_end, begin), end)
                sample_s += sample_end - begin
                update_s += end - sample_end
                steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            env_s = UNIT_CLOCK.seconds
            final = evaluate_module(module, job, len(job.eval_seeds), steps)
        finally:
            algo.stop()
        timing = {"env_s": env_s, "policy_s": max(sample_s - env_s, 0.0), "update_s": update_s,
                  "eval_s": eval_s + final.wall_s, "total_s": time.perf_counter() - started}
        return TrainResult(curve, final, steps, timing, "native" if native_path(job) else "python",
                           library_versions(LIBRARIES))


__all__ = ["LIBRARIES", "SB3_DEFAULTS", "RLlibEngine", "StudyEnvCreator", "UNIT_CLOCK",
           "algorithm_config", "evaluate_module", "greedy_actions", "library_versions", "model_config",
           "native_path", "single_env"]
