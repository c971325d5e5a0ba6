"""Readers by name: what ``--reader`` and the ``"reader"`` key of reader kwargs select.

* ``"simulated"`` (default): :class:`~tepa_envs.agents.readers.EvidenceReader`,
  with the settings table's kwargs for the environment under the run's;
* ``"local-lm"``: :class:`~tepa_envs.agents.readers.local_lm.LocalLMReader`
  (a packaged GGUF model on the CPU);
* ``"openai"``: :class:`~tepa_envs.agents.readers.openai_reader.OpenAIReader`
  (any OpenAI-compatible endpoint).

``"profile"`` in the kwargs names a reader profile for the simulated reader (a
shipped name such as ``never-explore`` or a ``.toml``/``.json`` file); its
parameters apply under the run's other kwargs.

The harness passes the same reader kwargs to every method's episodes, so every
method is read by the same reader with the same parameters (and a language-model
reader's prompts share one template and one decision cache). The reader's name
and parameters are part of the run's reader kwargs, and so of ``results.json``.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Mapping

from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.profile import load_profile

READER_KEY = "reader"
"""The key of reader kwargs naming the reader."""

READER_NAMES: tuple[str, ...] = ("simulated", "local-lm", "openai")

PROFILE_KEY = "profile"
"""The key of reader kwargs naming a reader profile (a shipped name or a file,
:mod:`~tepa_envs.agents.readers.profile`): its parameters apply under the other keys."""


@functools.lru_cache(maxsize=64)
def _profile_kwargs(profile: str) -> tuple[tuple[str, Any], ...]:
    return tuple(load_profile(profile).reader_kwargs().items())


def profile_reader_kwargs(profile: str) -> dict[str, Any]:
    """The simulated reader's kwargs of ``profile`` (read once per process)."""
    if not isinstance(profile, str):
        raise TypeError(f"{PROFILE_KEY} must be a profile name or file (str), got {type(profile).__name__}")
    return dict(_profile_kwargs(profile))


def with_profile(reader_kwargs: Mapping[str, Any], profile: str | None) -> dict[str, Any]:
    """``reader_kwargs`` under ``profile``: the profile named and its parameters written
    out, so a run's results and cell identities record the numbers it ran with."""
    if profile is None:
        return dict(reader_kwargs)
    return {PROFILE_KEY: profile, **profile_reader_kwargs(profile), **reader_kwargs}


def _reader_class(name: str) -> Callable[..., Any]:
    if name == "simulated":
        return EvidenceReader
    if name == "local-lm":
        from tepa_envs.agents.readers.local_lm import LocalLMReader

        return LocalLMReader
    from tepa_envs.agents.readers.openai_reader import OpenAIReader

    return OpenAIReader


def make_reader(reader_kwargs: Mapping[str, Any] | None = None,
                defaults: Mapping[str, Any] | None = None) -> Any:
    """The reader ``reader_kwargs`` describe: ``reader_kwargs["reader"]`` names it
    (default ``"simulated"``), the other keys are its arguments; ``defaults`` (the
    settings table's simulated-reader kwargs) apply to the simulated reader only."""
    kwargs = dict(reader_kwargs or {})
    name = kwargs.pop(READER_KEY, "simulated")
    if name not in READER_NAMES:
        raise ValueError(f"unknown reader {name!r}; valid: {', '.join(READER_NAMES)}")
    profile = kwargs.pop(PROFILE_KEY, None)
    if profile is not None and name != "simulated":
        raise ValueError(f"a reader profile ({profile!r}) configures the simulated reader, not the {name} reader")
    cls = _reader_class(name)
    if name == "simulated":
        kwargs = {**dict(defaults or {}), **(profile_reader_kwargs(profile) if profile is not None else {}), **kwargs}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        valid = [p for p in inspect.signature(cls).parameters if p != "self"]
        raise TypeError(f"bad reader kwargs {dict(reader_kwargs or {})}: {exc}; valid for the {name} reader: "
                        f"{', '.join(valid)}") from None


__all__ = ["PROFILE_KEY", "READER_KEY", "READER_NAMES", "make_reader", "profile_reader_kwargs", "with_profile"]
