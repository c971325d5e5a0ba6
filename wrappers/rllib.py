"""Ray RLlib: every registered environment, with or without a memory, by one call.

::

    from ray.rllib.algorithms.ppo import PPOConfig
    from tepa_envs.wrappers.rllib import register_envs

    register_envs()  # every id of tepa_envs.ENV_IDS, and MULTI_AGENT_ENV_ID
    config = (PPOConfig()
              .environment("TEPA/RegimeDrift-v0", env_config={"memory": "tepa", "flat": True})
              .debugging(seed=0))
    algo = config.build_algo()
    algo.train()

:func:`register_envs` registers, with ``ray.tune.registry.register_env``, an env
creator (:class:`RLlibEnvCreator`) under each environment id, so RLlib's env
runners (local or remote, any number of sub-environments) build the environment
from the ``env_config`` alone. The ``env_config`` keys read here:

* ``"memory"``: ``None`` (default, no memory), a method name (``"tepa"``,
  ``"lww"``, any name of :data:`~tepa_envs.wrappers.MEMORY_ENTRIES`' methods),
  an import path (``"package.module:ClassName"``) or a memory object (pickled to
  remote runners): the environment is wrapped in
  :class:`~tepa_envs.wrappers.MemoryObservation`;
* ``"memory_kwargs"``: the arguments of a memory given by name or path;
* ``"count_cap"``: as in :class:`~tepa_envs.wrappers.MemoryObservation`;
* ``"flat"``: ``True`` (default) wraps the result in
  :class:`~tepa_envs.wrappers.FlatObservation`, a ``Box(float32)`` that RLlib's
  default encoders (MLP, LSTM) take; ``False`` keeps the ``MultiDiscrete`` /
  ``Dict`` observation (for your own ``RLModule``);

every other key is an argument of the environment (``phase_lengths``,
``n_keys``, ...), passed to ``gym.make``.

**Seeding.** RLlib seeds an env runner's first reset when the algorithm has a
seed (``config.debugging(seed=s)``): runner ``w`` resets its sub-environment
``i`` with ``s + w + i``, so runner 1's second sub-environment and runner 2's
first would draw the same stream. The creator's :class:`RunnerSeeding` turns
that seed into ``SeedSequence([s + w + i, w])``'s first word, unique per
(runner, sub-environment) and the same in every run with the same ``s`` and
number of runners. Without an algorithm seed nothing is seeded (fresh entropy).

**Vectorised runners.** ``config.env_runners(num_envs_per_env_runner=n)``
builds ``n`` creator-made environments in a ``SyncVectorEnv`` (RLlib's default
``gym_env_vectorize_mode="sync"``) or in subprocesses (``"async"``: each
environment, memory included, lives in its own process). With
``gym_env_vectorize_mode="vector_entry_point"``, RegimeDrift and its scenarios
run as one native vector environment with the batched memory
(:class:`~tepa_envs.wrappers.MemoryObservationV`, for the methods of
:data:`~tepa_envs.wrappers.BATCHED_MEMORIES`) and
:class:`~tepa_envs.wrappers.FlatObservationV`; RLlib passes no runner index to
a vector entry point, so there sub-environment ``i`` of the runner seeded ``x``
gets ``SeedSequence([x, i])``'s first word.

**FactConsolidation.** ``TEPA/FactConsolidation-v0`` answers in free text by
default (``action_mode="text"``, a ``Text`` action space), which RLlib's
categorical and Gaussian action distributions cannot take; RLlib trains on it
with ``env_config={"action_mode": "choice"}`` (``Discrete(num_choices)``: one
of the question's candidate answers, :data:`REQUIRED_CONFIG`). Without it the
creator raises a ``ValueError`` naming the option.

**The multi-agent world.** :data:`MULTI_AGENT_ENV_ID` builds
``shared_drift_v0.parallel_env(**kwargs)``, with ``"memory"`` wrapped in
:class:`~tepa_envs.wrappers.SharedMemory` (``"shared"``: one team memory or one
each), in RLlib's ``ParallelPettingZooEnv``; its observations are already flat
``Box`` es. Train it with a policy per agent or one shared policy
(``config.multi_agent(policies=..., policy_mapping_fn=...)``).

**Learned memory.** RLlib's recurrent default model is the baseline without an
explicit memory: ``config.rl_module(model_config=DefaultModelConfig(use_lstm=True,
max_seq_len=20))`` with ``env_config={"memory": None}``.

Ray RLlib is imported when this module is; without it the import raises
Gymnasium's ``DependencyNotInstalled`` (``pip install "ray[rllib]"``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import VectorEnv, VectorWrapper

import tepa_envs
from tepa_envs.error import DependencyNotInstalled
from tepa_envs.multi_agent import shared_drift_v0
from tepa_envs.wrappers.flat_observation import FlatObservation, FlatObservationV
from tepa_envs.wrappers.memory_observation import MemoryObservation
from tepa_envs.wrappers.shared_memory import SharedMemory
from tepa_envs.wrappers.vector_memory import MemoryObservationV

try:
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env
except ImportError as exc:  # pragma: no cover - exercised only without ray[rllib]
    raise DependencyNotInstalled("tepa_envs.wrappers.rllib needs Ray RLlib: pip install 'ray[rllib]'") from exc

__all__ = ["CONFIG_KEYS", "MULTI_AGENT_ENV_ID", "REQUIRED_CONFIG", "RLlibEnvCreator", "RunnerSeeding",
           "VectorRunnerSeeding", "make_rllib_env", "register_envs"]

MULTI_AGENT_ENV_ID = "TEPA/SharedDrift-v0"
"""The RLlib name of the multi-agent world (``shared_drift_v0``) in ``ParallelPettingZooEnv``."""

CONFIG_KEYS = ("memory", "memory_kwargs", "count_cap", "flat", "shared")
"""The ``env_config`` keys the creator reads itself (``"shared"``: the multi-agent world only);
every other key is an argument of the environment."""

REQUIRED_CONFIG: dict[str, tuple[dict[str, Any], str]] = {
    "TEPA/FactConsolidation-v0": (
        {"action_mode": "choice"},
        ("TEPA/FactConsolidation-v0 answers in free text by default (action_mode='text', a Text action space), "
         "which RLlib's categorical and Gaussian action distributions cannot take: pass "
         "env_config={'action_mode': 'choice'} for Discrete(num_choices) answers (one of the question's candidates)")),
}
"""Registered ids RLlib trains on only with these ``env_config`` entries, and the reason their
creator gives (a ``ValueError``) when one is missing or different."""


def _seed_word(*entropy: int) -> int:
    """The first 32-bit word of ``SeedSequence(entropy)``: a seed unique per entropy tuple."""
    return int(np.random.SeedSequence([int(e) for e in entropy]).generate_state(1)[0])


class RunnerSeeding(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Reseeds a reset that RLlib seeds with ``SeedSequence([seed, worker_index])``'s first word
    (module docstring); an unseeded reset passes through.

    Args:
        env: the environment one env runner built.
        worker_index: the runner's index (``EnvContext.worker_index``; 0 for the local runner).
    """

    def __init__(self, env: gym.Env, worker_index: int) -> None:
        if isinstance(worker_index, bool) or not isinstance(worker_index, (int, np.integer)):
            raise TypeError(f"worker_index must be an int, got {type(worker_index).__name__}")
        if worker_index < 0:
            raise ValueError(f"worker_index must be >= 0, got {worker_index}")
        gym.utils.RecordConstructorArgs.__init__(self, worker_index=int(worker_index))
        gym.Wrapper.__init__(self, env)
        self.worker_index = int(worker_index)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            seed = _seed_word(seed, self.worker_index)
        return self.env.reset(seed=seed, options=options)


class VectorRunnerSeeding(VectorWrapper):
    """For a vector environment: a reset seeded with one int ``x`` seeds sub-environment ``i``
    with ``SeedSequence([x, i])``'s first word; a list of seeds or ``None`` passes through."""

    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None):
        # Any: Gymnasium's VectorEnv.reset is annotated int | None, though its vector envs take a list
        seeds: Any = seed
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [_seed_word(seed, i) for i in range(self.num_envs)]
        return self.env.reset(seed=seeds, options=options)


def _split(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    if not isinstance(config, Mapping):
        raise TypeError(f"env_config must be a mapping, got {type(config).__name__}")
    ours = {key: config[key] for key in CONFIG_KEYS if key in config}
    env_kwargs = {key: value for key, value in config.items() if key not in CONFIG_KEYS and key != "num_envs"}
    flat = ours.get("flat", True)
    if not isinstance(flat, bool):
        raise TypeError(f"env_config['flat'] must be a bool, got {type(flat).__name__}")
    memory_kwargs = ours.get("memory_kwargs")
    if memory_kwargs is not None and not isinstance(memory_kwargs, Mapping):
        raise TypeError(f"env_config['memory_kwargs'] must be a mapping or None, got {type(memory_kwargs).__name__}")
    if memory_kwargs is not None and ours.get("memory") is None:
        raise ValueError("env_config['memory_kwargs'] is given but env_config['memory'] is None")
    return ours, env_kwargs


def _memory_options(ours: Mapping[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {"memory_kwargs": dict(ours["memory_kwargs"]) if ours.get("memory_kwargs") else None}
    if "count_cap" in ours:
        options["count_cap"] = ours["count_cap"]
    return options


def make_rllib_env(env_id: str, config: Mapping[str, Any]) -> Any:
    """The environment RLlib's env runner gets for ``env_id`` and ``config`` (its ``env_config``,
    usually an ``EnvContext``): a Gymnasium env, a Gymnasium vector env when ``config`` carries
    ``num_envs`` (RLlib's ``vector_entry_point`` mode), or a ``ParallelPettingZooEnv`` for
    :data:`MULTI_AGENT_ENV_ID`. The keys are described in the module docstring.

    Raises:
        TypeError: ``env_id`` is not a str or a key has the wrong type.
        ValueError: ``env_id`` is not a registered id nor :data:`MULTI_AGENT_ENV_ID`, or
            ``config`` lacks an entry of :data:`REQUIRED_CONFIG` (the message names it).
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env_id must be a str, got {type(env_id).__name__}")
    if env_id != MULTI_AGENT_ENV_ID and env_id not in tepa_envs.ENV_IDS:
        raise ValueError(f"env_id must be one of {tepa_envs.ENV_IDS + (MULTI_AGENT_ENV_ID,)}, got {env_id!r}")
    ours, env_kwargs = _split(config)
    required, reason = REQUIRED_CONFIG.get(env_id, ({}, ""))
    for key, value in required.items():
        if env_kwargs.get(key) != value:
            raise ValueError(f"env_config[{key!r}] is {env_kwargs.get(key)!r}, not {value!r}: {reason}")
    worker_index = int(getattr(config, "worker_index", 0) or 0)
    memory = ours.get("memory")
    if env_id == MULTI_AGENT_ENV_ID:
        return _multi_agent(memory, ours, env_kwargs)
    if "shared" in ours:
        raise ValueError(f"env_config['shared'] applies to {MULTI_AGENT_ENV_ID} only, not {env_id}")
    num_envs = config.get("num_envs")
    if num_envs is not None:
        return _vector(env_id, int(num_envs), memory, ours, env_kwargs)
    return RunnerSeeding(_single(env_id, memory, ours, env_kwargs), worker_index)


def _single(env_id: str, memory: Any, ours: Mapping[str, Any], env_kwargs: dict[str, Any]) -> gym.Env:
    env: gym.Env = gym.make(env_id, **env_kwargs)
    if memory is not None:
        env = MemoryObservation(env, memory, **_memory_options(ours))
    if ours.get("flat", True):
        env = FlatObservation(env)
    return env


def _vector(env_id: str, num_envs: int, memory: Any, ours: Mapping[str, Any],
            env_kwargs: dict[str, Any]) -> VectorEnv:
    spec = gym.spec(env_id)
    if spec.vector_entry_point is None:  # no native vector env: the sub-environments in one process
        venv: VectorEnv = gym.vector.SyncVectorEnv(
            [lambda: _single(env_id, memory, ours, env_kwargs) for _ in range(num_envs)])
        return VectorRunnerSeeding(venv)
    venv = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **env_kwargs)
    if memory is not None:
        if not isinstance(memory, str):
            raise TypeError("env_config['memory'] must be a method name for the native vector env "
                            f"(gym_env_vectorize_mode='vector_entry_point'), got {type(memory).__name__}")
        venv = MemoryObservationV(venv, memory, **_memory_options(ours))
    if ours.get("flat", True):
        venv = FlatObservationV(venv)
    return VectorRunnerSeeding(venv)


def _multi_agent(memory: Any, ours: Mapping[str, Any], env_kwargs: dict[str, Any]) -> ParallelPettingZooEnv:
    if ours.get("memory_kwargs"):
        raise ValueError(f"env_config['memory_kwargs'] is not read by {MULTI_AGENT_ENV_ID}: SharedMemory takes "
                         "a method name or import path without arguments")
    if "phase_lengths" in env_kwargs:  # JSON-like configs give lists
        env_kwargs = {**env_kwargs, "phase_lengths": tuple(env_kwargs["phase_lengths"])}
    env = shared_drift_v0.parallel_env(**env_kwargs)
    if memory is not None:
        options: dict[str, Any] = {"shared": ours.get("shared", True)}
        if "count_cap" in ours:
            options["count_cap"] = ours["count_cap"]
        env = SharedMemory(env, memory, **options)
    elif "shared" in ours:
        raise ValueError("env_config['shared'] is given but env_config['memory'] is None")
    return ParallelPettingZooEnv(env)


class RLlibEnvCreator:
    """The env creator registered for one id: ``creator(env_config)`` is
    ``make_rllib_env(env_id, env_config)``. A plain class, so it pickles to remote runners."""

    def __init__(self, env_id: str) -> None:
        if not isinstance(env_id, str):
            raise TypeError(f"env_id must be a str, got {type(env_id).__name__}")
        self.env_id = env_id

    def __call__(self, config: Mapping[str, Any]) -> Any:
        return make_rllib_env(self.env_id, config)

    def __repr__(self) -> str:
        return f"RLlibEnvCreator({self.env_id!r})"


def register_envs(env_ids: Sequence[str] | None = None) -> tuple[str, ...]:
    """Registers the RLlib env creator of every id in ``env_ids`` (default: every id of
    ``tepa_envs.ENV_IDS`` and :data:`MULTI_AGENT_ENV_ID`) with ``ray.tune.registry.register_env``,
    so ``PPOConfig().environment(env_id, env_config={...})`` builds it. Call it in the driver
    before building the algorithm (Ray ships the registry to remote runners). Ids of
    :data:`REQUIRED_CONFIG` are registered too: with their entries they train, without
    them the creator raises the reason. Returns the ids registered.

    Raises:
        TypeError: ``env_ids`` is not a sequence of str.
        ValueError: an id is neither registered nor :data:`MULTI_AGENT_ENV_ID`.
    """
    known = tepa_envs.ENV_IDS + (MULTI_AGENT_ENV_ID,)
    if env_ids is None:
        env_ids = known
    if isinstance(env_ids, str) or not isinstance(env_ids, Sequence):
        raise TypeError(f"env_ids must be a sequence of str or None, got {type(env_ids).__name__}")
    for env_id in env_ids:
        if not isinstance(env_id, str):
            raise TypeError(f"env_ids must hold str, got {type(env_id).__name__}")
        if env_id not in known:
            raise ValueError(f"env_ids: {env_id!r} is not one of {known}")
    for env_id in env_ids:
        register_env(env_id, RLlibEnvCreator(env_id))
    return tuple(env_ids)
