"""tepa-envs: Gymnasium environments whose hidden rules drift under an agent's memory.

Importing this package registers the environments::

    import gymnasium as gym
    import tepa_envs

    env = gym.make("TEPA/RegimeDrift-v0")
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from tepa_envs.core import PHASE_NAMES, AuditEvent, Evidence, LifecycleState, Record

__all__ = ["PHASE_NAMES", "AuditEvent", "Evidence", "LifecycleState", "Record", "ENV_IDS"]
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
ENV_IDS: tuple[str, ...] = tuple(_ENTRY_POINTS)

for _env_id, _entry_point in _ENTRY_POINTS.items():
    if _env_id not in registry:
        register(id=_env_id, entry_point=_entry_point,
                 vector_entry_point=_VECTOR_ENTRY_POINTS.get(_env_id))
