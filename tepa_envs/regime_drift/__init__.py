"""``TEPA/RegimeDrift-v0``: a tool regime that drifts, reverses and partly returns,
with a native numpy-batched vector environment."""

from tepa_envs.regime_drift.env import RegimeDriftEnv
from tepa_envs.regime_drift.vector import RegimeDriftVectorEnv

__all__ = ["RegimeDriftEnv", "RegimeDriftVectorEnv"]
