"""Gymnasium and PettingZoo wrappers, imported as ``tepa_envs.wrappers``."""
