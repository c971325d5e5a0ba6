"""tepa-envs: Gymnasium environments whose hidden rules drift under an agent's memory.

Importing this package registers the environments::

    import gymnasium as gym
    import tepa_envs

    env = gym.make("TEPA/RegimeDrift-v0")

The specs set no ``max_episode_steps``, on purpose: every environment ends its own
episode (``terminated=True`` after the last task or question; it never truncates),
and its length depends on the kwargs (``sum(phase_lengths)``, or the facts and
questions of FactConsolidation's record). ``gym.make`` applies a spec's
``max_episode_steps`` as a ``TimeLimit`` wrapper whatever the kwargs, so a spec
of 160 would silently truncate an episode made with longer ``phase_lengths``.
A time limit below the episode length is still available where wanted:
``gym.make(env_id, max_episode_steps=n)``.
"""

from __future__ import annotations

import importlib.abc
import sys
from pathlib import Path

from gymnasium.envs.registration import register, registry

from tepa_envs.core import PHASE_NAMES, AuditEvent, Evidence, LifecycleState, Record

__all__ = ["PHASE_NAMES", "AuditEvent", "Evidence", "LifecycleState", "Record", "ENV_IDS", "SCENARIOS",
           "TASK_STREAM_IDS", "TWIN_IDS", "TWINS", "twin_id"]
__version__ = "0.1.0"

_ENTRY_POINTS = {
    "TEPA/RegimeDrift-v0": "tepa_envs.regime_drift.env:RegimeDriftEnv",
    "TEPA/FileOps-v0": "tepa_envs.file_ops.env:FileOpsEnv",
    "TEPA/PreferenceStream-v0": "tepa_envs.preferences.env:PreferenceStreamEnv",
    "TEPA/FactConsolidation-v0": "tepa_envs.facts.env:FactConsolidationEnv",
}
_VECTOR_ENTRY_POINTS = {
    "TEPA/RegimeDrift-v0": "tepa_envs.regime_drift.vector:RegimeDriftVectorEnv",
}
# Named drift scenarios: RegimeDrift with a schedule preset (documented in RegimeDriftEnv's
# "Registered scenarios"); kwargs are JSON values so the specs round-trip through JSON.
SCENARIOS: dict[str, dict[str, object]] = {
    "TEPA/RegimeDrift-Noisy-v0": {"schedule": "noisy"},
    "TEPA/RegimeDrift-Recurring-v0": {"schedule": "recurring"},
    "TEPA/RegimeDrift-Gradual-v0": {"schedule": "gradual"},
    "TEPA/RegimeDrift-Async-v0": {"schedule": "async", "n_keys": 4},
    "TEPA/RegimeDrift-Poisson-v0": {"schedule": "poisson", "n_keys": 4},
    "TEPA/RegimeDrift-ManyKeys-v0": {"n_keys": 8, "phase_lengths": [80, 80, 80, 80]},
    "TEPA/RegimeDrift-Zipf-v0": {"schedule": "zipf", "n_keys": 8, "phase_lengths": [80, 80, 80, 80]},
    "TEPA/RegimeDrift-NoisyManyKeys-v0": {"schedule": "noisy", "n_keys": 8, "phase_lengths": [80, 80, 80, 80]},
}
for _scenario_id in SCENARIOS:
    _ENTRY_POINTS[_scenario_id] = _ENTRY_POINTS["TEPA/RegimeDrift-v0"]
    _VECTOR_ENTRY_POINTS[_scenario_id] = _VECTOR_ENTRY_POINTS["TEPA/RegimeDrift-v0"]
ENV_IDS: tuple[str, ...] = tuple(_ENTRY_POINTS)
TASK_STREAM_IDS: tuple[str, ...] = tuple(env_id for env_id in ENV_IDS if env_id != "TEPA/FactConsolidation-v0")
"""The task-stream environments (:class:`~tepa_envs.core.stream.TaskStreamEnv`): every id that
takes ``notify`` and has a fully observed twin."""


def twin_id(env_id: str) -> str:
    """The fully observed twin of a task-stream id: ``TEPA/<name>-v0`` -> ``TEPA/<name>-MDP-v0``."""
    name, _, version = env_id.rpartition("-")
    return f"{name}-MDP-{version}"


# Fully observed twins (POPGym's MDP twins): the same entry point and kwargs with
# observe_truth=True, so a twin shares its original's world and seeds and adds the
# correct value's index to the observation (docs/environments/twins.md).
TWINS: dict[str, str] = {twin_id(env_id): env_id for env_id in TASK_STREAM_IDS}
"""Twin id -> the id it twins."""
TWIN_IDS: tuple[str, ...] = tuple(TWINS)

# No max_episode_steps: the episodes end themselves and their length follows the kwargs
# (see the module docstring); a TimeLimit from the spec would truncate longer episodes.
for _env_id, _entry_point in _ENTRY_POINTS.items():
    if _env_id not in registry:
        register(id=_env_id, entry_point=_entry_point, kwargs=dict(SCENARIOS.get(_env_id, {})),
                 vector_entry_point=_VECTOR_ENTRY_POINTS.get(_env_id))
for _twin, _original in TWINS.items():
    if _twin not in registry:
        register(id=_twin, entry_point=_ENTRY_POINTS[_original],
                 kwargs={**SCENARIOS.get(_original, {}), "observe_truth": True},
                 vector_entry_point=_VECTOR_ENTRY_POINTS.get(_original))


class _NotInstalledFinder(importlib.abc.MetaPathFinder):
    """The last finder on ``sys.meta_path``: reached for ``tepa_envs.agents`` or
    ``tepa_envs.wrappers`` only when no other finder found them, which happens
    when ``tepa_envs`` is imported from a source checkout that was never
    installed (``agents/`` and ``wrappers/`` become sub-packages of ``tepa_envs``
    only through the ``package-dir`` mapping that ``pip install`` applies).
    Raises one clear ``ModuleNotFoundError`` instead of "No module named ...".
    """

    PACKAGES = ("agents", "wrappers")

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        parts = fullname.split(".")
        if len(parts) < 2 or parts[0] != __name__ or parts[1] not in self.PACKAGES:
            return None
        package = ".".join(parts[:2])
        if fullname != package and package in sys.modules:
            return None  # the sub-package is importable: a missing submodule is a plain miss
        checkout = Path(__file__).resolve().parent.parent
        if (checkout / "pyproject.toml").is_file() and (checkout / parts[1]).is_dir():
            message = (f"{package} is not importable: {__name__} was imported from the source checkout "
                       f"{checkout}, which is not installed ({parts[1]}/ becomes {package} only through "
                       f"the installation). Run `pip install -e .` in {checkout}.")
        else:
            message = (f"{package} is missing from the installation of {__name__} in {checkout}; "
                       "reinstall tepa-envs (`pip install -e .` in a source checkout).")
        raise ModuleNotFoundError(message, name=fullname)


if not any(type(finder).__name__ == _NotInstalledFinder.__name__ for finder in sys.meta_path):  # once, even on reload
    sys.meta_path.append(_NotInstalledFinder())
