"""An agent's handle on a task environment's declared contract (:class:`~tepa_envs.core.contracts.TaskEnv`).

Members are reached through ``env.get_wrapper_attr(name)``, so a wrapper may
override any of them; a missing member is reported once, naming the contract.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import gymnasium as gym

from tepa_envs.core import TrialFn
from tepa_envs.core.contracts import TASK_ENV_MEMBERS


@dataclass(frozen=True)
class TaskAccess:
    """The bound members of one environment's task contract."""

    choices: Callable[[str], tuple[str, ...]]
    to_action: Callable[[str], Any]
    stated_value: Callable[[str, str], "str | None"]
    trial: TrialFn | None
    """The environment's trial function, or ``None`` when it offers no trials."""
    env: Any
    known_keys: Callable[[], tuple[str, ...]]
    """The keys of the evidence the environment streamed so far (``()``: its tasks name their key)."""

    def trials_spent(self) -> dict[str, int]:
        """Trials run in the environment since its last reset, per kind."""
        if isinstance(self.env, gym.Env):
            return dict(self.env.get_wrapper_attr("trials_spent"))
        return dict(self.env.trials_spent)


def task_access(env: Any) -> TaskAccess:
    """Bind the task contract of ``env``: a Gymnasium env, possibly wrapped
    (members through ``get_wrapper_attr``), or any object offering the members
    itself, such as a PettingZoo environment."""
    try:
        if isinstance(env, gym.Env):
            member = env.get_wrapper_attr
            access = TaskAccess(member("choices"), member("to_action"), member("stated_value"),
                                member("trial") if member("offers_trials") else None, env, member("known_keys"))
        else:
            access = TaskAccess(env.choices, env.to_action, env.stated_value,
                                env.trial if env.offers_trials else None, env, env.known_keys)
    except AttributeError as exc:
        name = type(env.unwrapped if isinstance(env, gym.Env) else env).__name__
        raise TypeError(f"{name} does not implement the task contract "
                        f"(tepa_envs.core.contracts.TaskEnv: {', '.join(TASK_ENV_MEMBERS)}): {exc}") from None
    return access
