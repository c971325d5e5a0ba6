"""Readers by name: what ``--reader`` and the ``"reader"`` key of reader kwargs select.

* ``"simulated"`` (default): :class:`~tepa_envs.agents.readers.EvidenceReader`,
  with the settings table's kwargs for the environment under the run's;
* ``"local-lm"``: :class:`~tepa_envs.agents.readers.local_lm.LocalLMReader`
  (a packaged GGUF model on the CPU);
* ``"openai"``: :class:`~tepa_envs.agents.readers.openai_reader.OpenAIReader`
  (any OpenAI-compatible endpoint).

The harness passes the same reader kwargs to every method's episodes, so every
method is read by the same reader with the same parameters (and a language-model
reader's prompts share one template and one decision cache). The reader's name
and parameters are part of the run's reader kwargs, and so of ``results.json``.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping

from tepa_envs.agents.readers.evidence_reader import EvidenceReader

READER_KEY = "reader"
"""The key of reader kwargs naming the reader."""

READER_NAMES: tuple[str, ...] = ("simulated", "local-lm", "openai")


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
    cls = _reader_class(name)
    if name == "simulated":
        kwargs = {**dict(defaults or {}), **kwargs}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        valid = [p for p in inspect.signature(cls).parameters if p != "self"]
        raise TypeError(f"bad reader kwargs {dict(reader_kwargs or {})}: {exc}; valid for the {name} reader: "
                        f"{', '.join(valid)}") from None


__all__ = ["READER_KEY", "READER_NAMES", "make_reader"]
