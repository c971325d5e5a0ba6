"""The RL study's agents and its engine seam: what one training unit is, and who trains it.

An *agent* (:class:`AgentSpec`) is a learning algorithm with an observation
pipeline: the plain observation, a stack of the last observations, or the
observation with a memory's view added (:class:`~tepa_envs.wrappers.MemoryObservation`).
The study names agents by short names (:func:`parse_agent`):

* ``"ppo"``: PPO on the plain observation;
* ``"recurrent-ppo"``: ``RecurrentPPO`` (an LSTM policy, ``sb3-contrib``);
* ``"ppo-framestack"``: PPO on the last :data:`FRAME_STACK` observations;
* ``"ppo+NAME"``: PPO on ``MemoryObservation(env, NAME)``, ``NAME`` a registered
  memory (``tepa``, ``lww``, ``oracle-reset``, ...) or an import path
  ``package.module:ClassName`` (your own memory);
* ``"ppo-mdp-twin"``: PPO trained and evaluated on the environment's fully observed
  twin (``TEPA/<name>-MDP-v0``, ``observe_truth=True``: the current correct value is
  part of the observation), the ceiling of a learned policy on that drift;

or by a table (``label``, ``algorithm``, ``memory``, ``frame_stack``, ``twin``), where
``algorithm`` is ``"ppo"``, ``"recurrent-ppo"`` or, for your own policy, an
import path accepted by the engine (for the ``sb3`` engine: a
Stable-Baselines3 ``BaseAlgorithm`` subclass taking ``MlpPolicy``; the ``rllib``
engine refuses one).

**The engine seam.** One unit of the study is one (agent, environment, training
seed): a :class:`TrainJob`, small and picklable, sent to a worker process. An
*engine* turns it into a :class:`TrainResult`: the evaluations of the policy at
its checkpoints and at the end (per-task success and phase of every held-out
episode), the time split and the library versions. Engines are named in
:data:`ENGINES` by import path and loaded in the worker (:func:`load_engine`), so
this module imports no learning library. Two are built: ``"sb3"`` (``SB3Engine`` in
:mod:`tepa_envs.wrappers.sb3_engine`, units in local worker processes) and ``"rllib"``
(``RLlibEngine`` in :mod:`tepa_envs.wrappers.rllib_engine`, units as Ray tasks on a
local Ray or a cluster). They live in the wrappers room because they wrap
environments with :mod:`tepa_envs.wrappers`, which nothing under ``agents/`` may
import (``tests/test_layout.py``). Another engine is a class with the same members
(:class:`Engine`: ``name``, ``uses_ray``, ``missing(agent)``,
``check(agent, env_id, env_kwargs)``, ``train(job)``) named in :data:`ENGINES`, or
given to the study as an import path ``package.module:Class``; the study, the
store, the statistics and the outputs do not change.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import tepa_envs

FRAME_STACK = 4
"""Observations stacked by ``ppo-framestack``: the current one and the three before it."""
ALGORITHMS: tuple[str, ...] = ("ppo", "recurrent-ppo")
"""Algorithms named without an import path."""
ENGINES: dict[str, str] = {"sb3": "tepa_envs.wrappers.sb3_engine:SB3Engine",
                           "rllib": "tepa_envs.wrappers.rllib_engine:RLlibEngine"}
"""Engine name -> where its class lives: ``FILE.py:Class`` (a file of the checkout) or an
import path ``package.module:Class``."""
TWIN_AGENT = "ppo-mdp-twin"
"""PPO on each environment's fully observed twin (``TEPA/<name>-MDP-v0``): the ceiling of a learned policy."""
CHECKOUT = Path(__file__).resolve().parents[3]
"""The checkout holding ``agents/`` (and ``benchmarks/``, where the ``sb3`` engine lives)."""


@dataclass(frozen=True)
class AgentSpec:
    """One agent: its label, algorithm, memory (``None``: none), frames stacked, and whether it
    trains and is evaluated on the environment's fully observed twin."""

    label: str
    algorithm: str = "ppo"
    memory: str | None = None
    frame_stack: int = 1
    twin: bool = False

    def identity(self) -> dict[str, Any]:
        """The JSON form recorded in the store (what makes two agents the same; ``twin`` only when
        set, so the agents that existed before it keep their unit ids)."""
        found: dict[str, Any] = {"label": self.label, "algorithm": self.algorithm, "memory": self.memory,
                                 "frame_stack": self.frame_stack}
        if self.twin:
            found["twin"] = True
        return found

    @property
    def oracle(self) -> bool:
        """Whether the agent is told the true phase boundaries (a bound, not a competitor)."""
        return self.memory is not None and self.memory.startswith("oracle")


def parse_agent(value: Any, where: str = "agents") -> AgentSpec:
    """An :class:`AgentSpec` from a short name or a table; ``TypeError``/``ValueError`` naming ``where``."""
    if isinstance(value, str):
        if value == "ppo":
            return AgentSpec("ppo")
        if value == "recurrent-ppo":
            return AgentSpec("recurrent-ppo", algorithm="recurrent-ppo")
        if value == "ppo-framestack":
            return AgentSpec("ppo-framestack", frame_stack=FRAME_STACK)
        if value == TWIN_AGENT:
            return AgentSpec(TWIN_AGENT, twin=True)
        if value.startswith("ppo+") and len(value) > 4:
            return AgentSpec(value, memory=value[4:])
        raise ValueError(f"{where}: unknown agent {value!r}; use ppo, recurrent-ppo, ppo-framestack, "
                         f"{TWIN_AGENT}, ppo+MEMORY or a table {{label, algorithm, memory, frame_stack, twin}}")
    if not isinstance(value, dict):
        raise TypeError(f"{where}: an agent is a name or a table, got {type(value).__name__}")
    unknown = set(value) - {"label", "algorithm", "memory", "frame_stack", "twin"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                         "allowed: label, algorithm, memory, frame_stack, twin")
    label, algorithm = value.get("label"), value.get("algorithm", "ppo")
    memory, frames, twin = value.get("memory"), value.get("frame_stack", 1), value.get("twin", False)
    if not isinstance(label, str) or not label or "|" in label:
        raise TypeError(f"{where}.label must be a non-empty string without '|', got {label!r}")
    if not isinstance(algorithm, str) or not (algorithm in ALGORITHMS or ":" in algorithm):
        raise ValueError(f"{where}.algorithm must be one of {', '.join(ALGORITHMS)} or an import path "
                         f"'package.module:Class', got {algorithm!r}")
    if memory is not None and (not isinstance(memory, str) or not memory):
        raise TypeError(f"{where}.memory must be a memory name or import path (a string), got {memory!r}")
    if isinstance(frames, bool) or not isinstance(frames, int) or not 1 <= frames <= 64:
        raise ValueError(f"{where}.frame_stack must be an integer from 1 to 64, got {frames!r}")
    if not isinstance(twin, bool):
        raise TypeError(f"{where}.twin must be true or false, got {twin!r}")
    return AgentSpec(label, algorithm, memory, frames, twin)


@dataclass(frozen=True)
class Hyper:
    """The learning settings every agent of a study shares (PPO's; the LSTM's size for
    ``recurrent-ppo``). A rollout is ``n_envs * n_steps`` environment steps."""

    n_envs: int = 8
    n_steps: int = 128
    batch_size: int = 256
    n_epochs: int = 4
    learning_rate: float = 3e-4
    gamma: float = 0.9
    ent_coef: float = 0.01
    net_arch: tuple[int, ...] = (64, 64)
    lstm_hidden_size: int = 64

    def to_json(self) -> dict[str, Any]:
        return {"n_envs": self.n_envs, "n_steps": self.n_steps, "batch_size": self.batch_size,
                "n_epochs": self.n_epochs, "learning_rate": self.learning_rate, "gamma": self.gamma,
                "ent_coef": self.ent_coef, "net_arch": list(self.net_arch),
                "lstm_hidden_size": self.lstm_hidden_size}


@dataclass(frozen=True)
class TrainJob:
    """One unit of the study: train ``agent`` on ``env_id`` from ``train_seed``, then evaluate.

    The policy is evaluated greedily on the held-out ``eval_seeds`` (consecutive; all at the
    end; the first ``curve_episodes`` at every checkpoint: the start of each rollout once
    ``timesteps * j / checkpoints`` steps are reached, ``j = 0 .. checkpoints - 1``).
    Training sub-environment ``i`` is seeded ``train_seed * SEED_STRIDE + i``;
    ``fast_path`` lets the engine use the native batched vector env where it exists."""

    engine: str
    env_id: str
    env_kwargs: dict[str, Any]
    agent: AgentSpec
    train_seed: int
    timesteps: int
    checkpoints: int
    eval_seeds: tuple[int, ...]
    curve_episodes: int
    hyper: Hyper = field(default_factory=Hyper)
    fast_path: bool = True

    def describe(self) -> str:
        return f"{self.agent.label} on {self.env_id}, training seed {self.train_seed}"

    def target_env(self) -> tuple[str, dict[str, Any]]:
        """The id and kwargs the agent trains and is evaluated on: ``env_id``, or for a twin agent
        its fully observed twin (:func:`twin_of`)."""
        return (twin_of(self.env_id) if self.agent.twin else self.env_id), dict(self.env_kwargs)


def twin_of(env_id: str) -> str:
    """The fully observed twin of ``env_id`` (``tepa_envs.twin_id``); ``ValueError`` for an id
    that has none (the twins are those of ``tepa_envs.TASK_STREAM_IDS``)."""
    if env_id not in tepa_envs.TASK_STREAM_IDS:
        raise ValueError(f"{env_id} has no fully observed twin; the twin agent runs on "
                         f"{', '.join(tepa_envs.TASK_STREAM_IDS)}")
    return tepa_envs.twin_id(env_id)


SEED_STRIDE = 1000
"""Training seeds ``s`` seed sub-environments ``s * 1000 + i``; held-out seeds start at :data:`EVAL_SEED_START`."""
EVAL_SEED_START = 10**8
"""First held-out evaluation seed (far above any training sub-environment's seed)."""


@dataclass
class Evaluation:
    """The greedy policy on held-out episodes after ``step`` training steps: per episode
    (in seed order), the success of every scored task and its phase index."""

    step: int
    success: list[list[bool]]
    phase: list[list[int]]
    wall_s: float


@dataclass
class TrainResult:
    """What an engine returns for a :class:`TrainJob`.

    ``timing`` (seconds): ``env_s`` (environment and memory steps while training),
    ``policy_s`` (the policy's forward passes while collecting rollouts),
    ``update_s`` (the algorithm's gradient updates), ``eval_s`` (checkpoint and final
    evaluations), ``total_s``; ``path`` says which training path ran (``"native"``:
    the batched vector env with the batched memory; ``"python"``: one wrapped env per
    sub-environment); ``versions`` the learning libraries' versions."""

    curve: list[Evaluation]
    final: Evaluation
    timesteps: int
    timing: dict[str, float]
    path: str
    versions: dict[str, str]


class Engine(Protocol):
    """What the study needs from a learning library (see the module docstring)."""

    name: str
    uses_ray: bool
    """Whether the study runs the engine's units as Ray tasks (a local Ray, or ``--address``)."""

    def missing(self, agent: AgentSpec) -> str | None:
        """Why ``agent`` cannot run here (a library not installed), or ``None``."""

    def check(self, agent: AgentSpec, env_id: str, env_kwargs: dict[str, Any]) -> None:
        """``TypeError``/``ValueError`` when ``agent`` cannot observe ``env_id`` (e.g. a memory
        that does not build); builds the agent's observation pipeline once."""

    def train(self, job: TrainJob) -> TrainResult:
        """Train and evaluate one unit (in a worker process; deterministic for a job on one CPU)."""


def engine_names() -> tuple[str, ...]:
    return tuple(ENGINES)


def load_engine(name: str) -> Engine:
    """The engine ``name`` (a key of :data:`ENGINES` or an import path ``package.module:Class``),
    loaded now; ``ValueError`` when it is neither or cannot be loaded."""
    where = ENGINES.get(name, name)
    path, _, attr = where.partition(":")
    if not attr:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)} or an import path "
                         f"'package.module:Class', got {name!r}")
    try:
        if path.endswith(".py"):
            module_name = f"_tepa_rl_engine_{Path(path).stem}"
            module = sys.modules.get(module_name)
            if module is None:
                spec = importlib.util.spec_from_file_location(module_name, CHECKOUT / path)
                if spec is None or spec.loader is None or not (CHECKOUT / path).is_file():
                    raise ImportError(f"{CHECKOUT / path} not found (the {name!r} engine runs from a checkout)")
                module = importlib.util.module_from_spec(spec)
                sys.modules[module_name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[module_name]
                    raise
        else:
            module = importlib.import_module(path)
        return getattr(module, attr)()
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load engine {name!r} ({where}): {exc}") from None


def train_unit(job: TrainJob) -> TrainResult:
    """Run one unit on its engine (the function a worker process runs)."""
    return load_engine(job.engine).train(job)


__all__ = ["ALGORITHMS", "ENGINES", "EVAL_SEED_START", "FRAME_STACK", "SEED_STRIDE", "CHECKOUT", "TWIN_AGENT",
           "AgentSpec", "Engine", "Evaluation", "Hyper", "TrainJob", "TrainResult", "engine_names", "load_engine",
           "parse_agent", "train_unit", "twin_of"]
