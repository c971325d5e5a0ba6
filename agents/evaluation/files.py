"""The path the README documents for run manifests (``tepa_envs.agents.evaluation.files.verify_manifest``):
the names of :mod:`~tepa_envs.agents.evaluation.outputs.files`, re-exported."""

from tepa_envs.agents.evaluation.outputs.files import *  # noqa: F401,F403
from tepa_envs.agents.evaluation.outputs.files import __all__  # noqa: F401
