"""What every ``tepa-bench`` command checks in its arguments: one-line usage errors."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tepa_envs.error import TepaError
from tepa_envs.agents.evaluation.engine.spec import MAX_NESTING, SpecError, check_nesting
from tepa_envs.agents.evaluation.outputs.files import OutputDirError, lock_output_dir, prepare_output_dir
from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.agents.readers.factory import with_profile

MAX_SEEDS = 1_000_000
"""Largest ``--seeds``: a million seeds is far beyond any precision the protocol needs."""


class UsageError(TepaError):
    """A bad command line: reported in one line with exit status 2."""


def output_dir(path: str | Path) -> Path:
    """``--out``, created and checked to be a writable directory before any work, and
    locked for the run (:func:`~tepa_envs.agents.evaluation.outputs.files.lock_output_dir`:
    a second run into it is refused naming the holder; ``main`` releases it)."""
    try:
        out = prepare_output_dir(path)
        lock_output_dir(out)
        return out
    except OutputDirError as exc:
        raise UsageError(f"--out: {exc}") from None


def log(args: argparse.Namespace, message: str) -> None:
    if args.quiet:
        print(message, file=sys.stderr)


def parse_methods(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    if "all" in methods:
        methods = [m for m in methods if m != "all"]
        methods = list(METHOD_NAMES) + [m for m in methods if m not in METHOD_NAMES]
    if not methods:
        raise UsageError("--methods is empty; valid names: " + ", ".join(METHOD_NAMES))
    return methods


def parse_json_object(option: str, text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        kwargs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option} is not valid JSON: {exc}") from None
    except RecursionError:
        raise UsageError(f"{option} nests deeper than {MAX_NESTING} levels") from None
    if not isinstance(kwargs, dict):
        raise UsageError(f"{option} must be a JSON object, e.g. '{{\"n_keys\": 2}}'")
    try:
        check_nesting(kwargs, option)
    except SpecError as exc:
        raise UsageError(str(exc)) from None
    return kwargs




def reader_profile_kwargs(args: argparse.Namespace, reader_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """``reader_kwargs`` under ``--reader-profile`` (the profile's parameters written out);
    a profile that cannot be read is a usage error."""
    try:
        return with_profile(reader_kwargs or {}, args.reader_profile)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--reader-profile: {exc}") from None


__all__ = ["MAX_SEEDS", "UsageError", "log", "output_dir", "parse_json_object", "parse_methods",
           "reader_profile_kwargs"]
