"""Typed jobs: one (method, seed) episode of one environment, its settings resolved.

A :class:`Job` carries everything the runner needs: the environment (id and
kwargs), the method, the seed, the reader kwargs of the run and, resolved once
from the settings table when the jobs are built (:meth:`Job.resolve`,
:func:`build_jobs`), the method's constructor arguments, the reader's defaults,
the reading strategy and the phases on which the agent decides. The runner
(:mod:`~tepa_envs.agents.evaluation.engine.runner`) never reads the settings table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from tepa_envs.agents.evaluation.analysis.settings import EnvSettings, settings_for
from tepa_envs.agents.memories.protocol import Memory


@dataclass(frozen=True)
class MethodSpec:
    """A method run under its own label with extra constructor arguments, e.g. an
    ablation: ``MethodSpec("tepa failed=count", "tepa", {"failed_candidate": "count"})``."""

    label: str
    spec: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise TypeError(f"label must be a non-empty str, got {self.label!r}")
        if not isinstance(self.spec, str):
            raise TypeError(f"spec must be a method name or import path (str), got {type(self.spec).__name__}")
        if not isinstance(self.kwargs, dict):
            raise TypeError(f"kwargs must be a dict, got {type(self.kwargs).__name__}")


Method = str | MethodSpec | Memory
"""A method as a job names it: a registry name or import path, a :class:`MethodSpec`, or a
memory object (in-process jobs only: it is not sent to a worker)."""


def method_label(method: str | MethodSpec) -> str:
    """The name a method's results are reported under."""
    return method.label if isinstance(method, MethodSpec) else method


def check_method(method: object) -> None:
    """``TypeError`` unless ``method`` is a name, an import path or a :class:`MethodSpec`."""
    if isinstance(method, (str, MethodSpec)):
        return
    if isinstance(method, type):
        raise TypeError(f"methods must be names, import paths or MethodSpec; got the class {method.__qualname__} "
                        f"— pass '{method.__module__}:{method.__qualname__}'")
    raise TypeError(f"methods must be names, import paths or MethodSpec; got {type(method).__name__} {method!r:.60}")


@dataclass(frozen=True)
class Job:
    """One episode: ``method`` on ``seed`` of ``env_id`` built with ``env_kwargs``.

    ``reader_kwargs`` override ``reader_defaults`` (the settings table's reader for the
    environment) alike for every method; ``memory`` is what the memory is built from
    (the method's name or import path, or a memory object) with ``memory_kwargs``
    (the settings table's arguments for the method, then a :class:`MethodSpec`'s own).
    Build jobs with :meth:`resolve` or :func:`build_jobs`.
    """

    env_id: str
    env_kwargs: dict[str, Any]
    method: Method
    seed: int
    reader_kwargs: dict[str, Any]
    memory: str | Memory
    memory_kwargs: dict[str, Any]
    reader_defaults: dict[str, Any]
    reading: str
    decide_phases: tuple[int, ...] | None

    @classmethod
    def resolve(cls, env_id: str, method: Method, seed: int, *, env_kwargs: dict[str, Any] | None = None,
                reader_kwargs: dict[str, Any] | None = None, settings: EnvSettings | None = None) -> Job:
        """The job of ``method`` on ``seed``, its settings resolved from ``settings``
        (default: the settings table's entry for ``env_id``)."""
        settings = settings_for(env_id) if settings is None else settings
        if isinstance(method, MethodSpec):
            memory: str | Memory = method.spec
            memory_kwargs = {**settings.kwargs_for(method.spec), **method.kwargs}
        else:
            memory, memory_kwargs = method, settings.kwargs_for(method)
        return cls(env_id, dict(env_kwargs or {}), method, int(seed), dict(reader_kwargs or {}), memory,
                   memory_kwargs, dict(settings.reader_kwargs), settings.reading, settings.decide_phases)

    @property
    def label(self) -> str:
        """The name the method's results are reported under."""
        return method_label(self.method)  # type: ignore[arg-type]

    def describe(self) -> str:
        """``method M, seed S``: the job, as an error names it."""
        return f"method {self.label}, seed {self.seed}"


def build_jobs(env_id: str, methods: Sequence[Method], seeds: Sequence[int], *,
               env_kwargs: dict[str, Any] | None = None, reader_kwargs: dict[str, Any] | None = None) -> list[Job]:
    """Every method on every seed (method by method), the settings table read once."""
    settings = settings_for(env_id)
    return [Job.resolve(env_id, method, seed, env_kwargs=env_kwargs, reader_kwargs=reader_kwargs, settings=settings)
            for method in methods for seed in seeds]


__all__ = ["Job", "Method", "MethodSpec", "build_jobs", "check_method", "method_label"]
