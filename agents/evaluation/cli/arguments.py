"""What every ``tepa-bench`` command checks in its arguments: one-line usage errors."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tepa_envs.agents.evaluation.outputs.files import OutputDirError, prepare_output_dir
from tepa_envs.agents.memories.registry import METHOD_NAMES

MAX_SEEDS = 1_000_000
"""Largest ``--seeds``: a million seeds is far beyond any precision the protocol needs."""


class UsageError(Exception):
    """A bad command line: reported in one line with exit status 2."""


def output_dir(path: str | Path) -> Path:
    """``--out``, created and checked to be a writable directory before any work."""
    try:
        return prepare_output_dir(path)
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
    if not isinstance(kwargs, dict):
        raise UsageError(f"{option} must be a JSON object, e.g. '{{\"n_keys\": 2}}'")
    return kwargs


__all__ = ["MAX_SEEDS", "UsageError", "log", "output_dir", "parse_json_object", "parse_methods"]
