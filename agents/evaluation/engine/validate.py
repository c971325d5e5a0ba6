"""Checks run before any job starts: the environment id, its kwargs and the methods."""

from __future__ import annotations

import inspect
from typing import Any, Sequence

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents.evaluation.analysis.settings import settings_for
from tepa_envs.agents.evaluation.engine.jobs import Job, MethodSpec, check_method, method_label
from tepa_envs.agents.evaluation.engine.runner import make_agent
from tepa_envs.agents.readers.task_access import task_access


def check_env_id(env_id: str) -> None:
    """``ValueError`` naming the registered TEPA environments unless ``env_id`` is registered."""
    if env_id not in gym.envs.registry:
        tepa_ids = sorted(i for i in gym.envs.registry if i.startswith("TEPA/"))
        raise ValueError(f"unknown environment {env_id!r}; registered TEPA environments: {', '.join(tepa_ids)}")


def env_kwarg_names(env_id: str) -> list[str]:
    """Keyword arguments the environment's constructor accepts."""
    entry_point = gym.spec(env_id).entry_point
    if entry_point is None:
        raise ValueError(f"environment {env_id!r} is registered without an entry point")
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    return [name for name, p in inspect.signature(creator).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name != "self"]


def validate_methods(env_id: str, env_kwargs: dict[str, Any], methods: Sequence[str | MethodSpec],
                     reader_kwargs: dict[str, Any] | None = None) -> None:
    """Fail fast, before any process starts, on an unknown method, bad kwargs, or an
    environment without the task contract (:class:`~tepa_envs.core.contracts.TaskEnv`)."""
    check_env_id(env_id)
    if isinstance(methods, (str, MethodSpec)):
        raise TypeError(f"methods must be a list of names, import paths or MethodSpec, got {methods!r}")
    if not methods:
        raise ValueError("no methods given")
    for method in methods:
        check_method(method)
    labels = [method_label(m) for m in methods]
    if len(set(labels)) != len(labels):
        raise ValueError(f"methods listed twice: {', '.join(sorted(m for m in labels if labels.count(m) > 1))}")
    env = gym.make(env_id, **env_kwargs)
    try:
        task_access(env)
    except TypeError as exc:
        raise TypeError(f"{env_id} cannot be evaluated: {exc}") from None
    finally:
        env.close()
    settings = settings_for(env_id)
    for method in methods:
        make_agent(Job.resolve(env_id, method, 0, env_kwargs=env_kwargs, reader_kwargs=reader_kwargs,
                               settings=settings))


__all__ = ["check_env_id", "env_kwarg_names", "validate_methods"]
