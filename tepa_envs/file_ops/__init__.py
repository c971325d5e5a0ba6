"""``TEPA/FileOps-v0``: real CSV/JSON exports read by a drifting consumer, inside a contained sandbox."""

from tepa_envs.file_ops.env import FileOpsEnv
from tepa_envs.file_ops.sandbox import Sandbox, install_sigterm_cleanup, remove_sigterm_cleanup
from tepa_envs.file_ops.sandbox_paths import SandboxError

__all__ = ["FileOpsEnv", "Sandbox", "SandboxError", "install_sigterm_cleanup", "remove_sigterm_cleanup"]
