"""``TEPA/PreferenceStream-v0``: a simulated user whose preferences drift among transient noise."""

from tepa_envs.preferences.env import PreferenceStreamEnv

__all__ = ["PreferenceStreamEnv"]
