"""A Gymnasium vector env (e.g. :class:`~tepa_envs.wrappers.MemoryObservationV`) as a Stable-Baselines3 ``VecEnv``.

Stable-Baselines3 (the ``rl`` extra) is imported when this module is; without it
the import raises Gymnasium's ``DependencyNotInstalled``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tepa_envs.error import DependencyNotInstalled

try:
    from stable_baselines3.common.vec_env import VecEnv
except ImportError as exc:  # pragma: no cover - exercised only without the rl extra
    raise DependencyNotInstalled("tepa_envs.wrappers.sb3 needs Stable-Baselines3: pip install 'tepa-envs[rl]'") from exc

from gymnasium.vector import VectorEnv


class SB3VecEnv(VecEnv):
    """Stable-Baselines3's ``VecEnv`` interface over a Gymnasium vector env that accepts
    ``reset(options={"reset_mask": mask})`` (the native RegimeDrift vector env and
    :class:`~tepa_envs.wrappers.MemoryObservationV` do).

    Stable-Baselines3 resets a sub-environment in the step that ends its episode
    (its ``terminal_observation`` in the step's info); Gymnasium's native vector
    env resets it on the next step. This adapter resets the ended sub-environments
    at once with ``reset_mask`` (no seed: each continues its random stream, as an
    autoreset does), so a policy sees the same observations as with
    ``DummyVecEnv`` of the single environments: for the same seeds and actions,
    ``SB3VecEnv(MemoryObservationV(gym.make_vec(..., num_envs=n), "tepa"))`` and
    ``DummyVecEnv([MemoryObservation(gym.make(...), "tepa")] * n)`` return equal
    observations, rewards and dones (``tests/wrappers/test_vector_memory.py``).
    Per-sub-environment ``get_attr``/``set_attr``/``env_method`` are not offered
    (the sub-environments live in arrays), except ``get_attr("render_mode")``.
    """

    def __init__(self, venv: VectorEnv) -> None:
        if not isinstance(venv, VectorEnv):
            raise TypeError(f"venv must be a gymnasium VectorEnv, got {type(venv).__name__}")
        self.venv = venv
        self._actions: np.ndarray | None = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)

    def reset(self) -> Any:
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        # a vector env takes a seed per sub-environment (SyncVectorEnv.reset's own annotation);
        # VectorEnv.reset's annotation says int | None only
        observations, _ = self.venv.reset(seed=seeds)  # type: ignore[arg-type]
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return observations

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        observations, rewards, terminations, truncations, _ = self.venv.step(self._actions)
        dones = np.logical_or(terminations, truncations)
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": bool(truncations[i] and not terminations[i])}
                                       for i in range(self.num_envs)]
        if dones.any():
            for i in np.flatnonzero(dones).tolist():
                infos[i]["terminal_observation"] = _row(observations, i)
            fresh, _ = self.venv.reset(options={"reset_mask": dones})
            observations = _merge(observations, fresh, dones)
        return observations, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == "render_mode":
            return [self.venv.render_mode] * len(list(self._get_indices(indices)))  # VectorEnv declares it
        raise AttributeError(f"SB3VecEnv offers no per-environment attribute {attr_name!r}")

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"SB3VecEnv cannot set the per-environment attribute {attr_name!r}")

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        raise AttributeError(f"SB3VecEnv offers no per-environment method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        return [False] * len(list(self._get_indices(indices)))

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs


def _row(observations: Any, i: int) -> Any:
    if isinstance(observations, dict):
        return {name: array[i].copy() for name, array in observations.items()}
    return observations[i].copy()


def _merge(observations: Any, fresh: Any, rows: np.ndarray) -> Any:
    if isinstance(observations, dict):
        return {name: np.where(rows.reshape((-1,) + (1,) * (array.ndim - 1)), fresh[name], array)
                for name, array in observations.items()}
    return np.where(rows.reshape((-1,) + (1,) * (observations.ndim - 1)), fresh, observations)
