"""``tepa-bench``: evaluate memory methods on TEPA environments with paired statistics.

    tepa-bench reproduce controlled|executable|preference|facts|all [--seeds N] [--workers K] [--out DIR]
    tepa-bench run ENV_ID --methods tepa,lww,my.pkg:MyMemory [--seeds N] [--workers K] [--out DIR]
    tepa-bench list
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import gymnasium as gym

from tepa_envs.agents.evaluation.harness import check_env_id, evaluate, summarize, validate_methods
from tepa_envs.agents.evaluation.settings import (
    KEY_NOISE_LEVELS,
    KEY_NOISE_METHODS,
    KEY_NOISE_PAPER,
    REPRODUCIBLE,
    SETTINGS,
    Setting,
    front_end_differences,
)
from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.agents.evaluation.report import format_table, plot_success, write_csv, write_json
from tepa_envs.agents.evaluation.results import Summary


class UsageError(Exception):
    """A bad command line: reported in one line with exit status 2."""


class ProgressBar:
    """A one-line progress bar on stderr (silent with ``--quiet`` or when not a terminal)."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label, self.enabled = label, enabled
        self.started = time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        width = 30
        filled = int(width * done / total)
        elapsed = time.perf_counter() - self.started
        sys.stderr.write(f"\r{self.label:<28} [{'#' * filled}{'.' * (width - filled)}] "
                         f"{done}/{total} {elapsed:5.1f}s")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _log(args: argparse.Namespace, message: str) -> None:
    if args.quiet:
        print(message, file=sys.stderr)


def _parse_methods(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    if "all" in methods:
        methods = [m for m in methods if m != "all"]
        methods = list(METHOD_NAMES) + [m for m in methods if m not in METHOD_NAMES]
    if not methods:
        raise UsageError("--methods is empty; valid names: " + ", ".join(METHOD_NAMES))
    return methods


def _parse_json_object(option: str, text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        kwargs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option} is not valid JSON: {exc}") from None
    if not isinstance(kwargs, dict):
        raise UsageError(f"{option} must be a JSON object, e.g. '{{\"n_keys\": 2}}'")
    return kwargs


def _evaluate_and_write(args: argparse.Namespace, env_id: str, methods: list[str],
                        env_kwargs: dict[str, Any], out: Path | None, setting: Setting | None,
                        label: str) -> Summary:
    progress = ProgressBar(label, enabled=not args.quiet and sys.stderr.isatty())
    _log(args, f"{label}: {len(methods)} methods x {args.seeds} seeds on {env_id} ({args.workers} workers)")
    reader_kwargs = getattr(args, "reader_kwargs_parsed", {})
    evaluation = evaluate(env_id, methods, range(args.seeds), env_kwargs=env_kwargs,
                          workers=args.workers, progress=progress, reader_kwargs=reader_kwargs)
    results = summarize(evaluation)
    if setting is not None:
        results = results.with_setting(setting)
    print(f"\n== {label}: {env_id} {env_kwargs or ''} {reader_kwargs or ''} "
          f"({args.seeds} seeds, {evaluation.elapsed_s:.1f}s) ==")
    print(format_table(results, setting))
    for method, kwargs in front_end_differences(env_id, methods).items():
        print(f"front-end difference: {method} built with {kwargs} on {env_id}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_json(results, out / "results.json")
        write_csv(results, out / "results.csv", setting)
        plot_success(results, out / "success.png")
        _log(args, f"wrote {out / 'results.json'}, results.csv, success.png")
    return results


def _key_noise(args: argparse.Namespace, out: Path | None) -> None:
    rows: dict[str, list[float]] = {m: [] for m in KEY_NOISE_METHODS}
    for level in KEY_NOISE_LEVELS:
        progress = ProgressBar(f"key noise {level:.2f}", enabled=not args.quiet and sys.stderr.isatty())
        evaluation = evaluate("TEPA/RegimeDrift-v0", KEY_NOISE_METHODS, range(args.seeds),
                              env_kwargs={"key_noise": level}, workers=args.workers, progress=progress)
        for method in KEY_NOISE_METHODS:
            rows[method].append(float(evaluation.phase_success(method, 2).mean()))
    print(f"\n== key-noise robustness (full reversal; {', '.join(f'{x:.0%}' for x in KEY_NOISE_LEVELS)} "
          "of evidence keys corrupted) ==")
    print(f"{'method':<24}{'ours':>34}{'paper':>34}")
    for method in KEY_NOISE_METHODS:
        ours = " / ".join(f"{x:.3f}" for x in rows[method])
        paper = " / ".join("—" if x is None else f"{x:.3f}" for x in KEY_NOISE_PAPER[method])
        print(f"{method:<24}{ours:>34}{paper:>34}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "key_noise.json").write_text(json.dumps(
            {"levels": list(KEY_NOISE_LEVELS), "full_reversal_success": rows, "paper": KEY_NOISE_PAPER},
            indent=2) + "\n")


def _reproduce_facts(args: argparse.Namespace, out: Path | None) -> None:
    from tepa_envs.agents.evaluation.facts import format_facts_table, reproduce_facts

    progress = ProgressBar("facts", enabled=not args.quiet and sys.stderr.isatty())
    rows = reproduce_facts(workers=args.workers, progress=progress)
    print("\n== FactConsolidation (synthetic MemoryAgentBench-style data; substring exact match) ==")
    print(format_facts_table(rows))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")


def cmd_reproduce(args: argparse.Namespace) -> int:
    names = list(REPRODUCIBLE) if args.setting == "all" else [args.setting]
    base = Path(args.out) if args.out else None
    for name in names:
        out = base / name if base is not None else None
        if name == "facts":
            _reproduce_facts(args, out)
            continue
        setting = SETTINGS[name]
        _evaluate_and_write(args, setting.env_id, list(setting.methods), dict(setting.env_kwargs),
                            out, setting, name)
        if name == "controlled":
            _key_noise(args, out)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    try:
        check_env_id(args.env_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    methods = _parse_methods(args.methods)
    env_kwargs = _parse_json_object("--env-kwargs", args.env_kwargs)
    args.reader_kwargs_parsed = _parse_json_object("--reader-kwargs", args.reader_kwargs)
    unknown = sorted(set(env_kwargs) - set(env_kwarg_names(args.env_id)))
    if unknown:
        raise UsageError(f"unknown kwargs for {args.env_id}: {', '.join(unknown)}; "
                         f"valid: {', '.join(env_kwarg_names(args.env_id))}")
    try:
        validate_methods(args.env_id, env_kwargs, methods, args.reader_kwargs_parsed)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    out = Path(args.out) if args.out else None
    _evaluate_and_write(args, args.env_id, methods, env_kwargs, out, None, "run")
    return 0


def env_kwarg_names(env_id: str) -> list[str]:
    """Keyword arguments the environment's constructor accepts."""
    from gymnasium.envs.registration import load_env_creator

    creator = load_env_creator(gym.spec(env_id).entry_point)
    return [name for name, p in inspect.signature(creator).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name != "self"]


def cmd_list(args: argparse.Namespace) -> int:
    print("environments: " + ", ".join(sorted(i for i in gym.envs.registry if i.startswith("TEPA/"))))
    print("methods: " + ", ".join(METHOD_NAMES))
    print("settings: " + ", ".join(REPRODUCIBLE) + ", all")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tepa-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, default_seeds: int) -> None:
        p.add_argument("--seeds", type=int, default=default_seeds, help="number of seeds (0..N-1)")
        p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                       help="worker processes; results do not depend on it")
        p.add_argument("--out", help="directory for results.json, results.csv and success.png")
        p.add_argument("--quiet", action="store_true", help="no progress bar; log lines on stderr")

    reproduce = sub.add_parser("reproduce", help="reproduce a table of the paper, side by side")
    reproduce.add_argument("setting", help="one of: " + ", ".join(REPRODUCIBLE) + ", all")
    common(reproduce, 50)
    reproduce.set_defaults(func=cmd_reproduce)

    run = sub.add_parser("run", help="evaluate any methods on any registered environment")
    run.add_argument("env_id")
    run.add_argument("--methods", required=True,
                     help="comma-separated names or import paths 'package.module:ClassName'; "
                          "'all' for every shipped method")
    run.add_argument("--env-kwargs", help="JSON object of environment kwargs")
    run.add_argument("--reader-kwargs", help="JSON object overriding the reader's parameters for every "
                     "method alike, e.g. '{\"follow_prob\": 0.99}'")
    common(run, 10)
    run.set_defaults(func=cmd_run)

    listing = sub.add_parser("list", help="list environments, methods and settings")
    listing.set_defaults(func=cmd_list, quiet=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "seeds", 1) < 1:
            raise UsageError(f"--seeds must be >= 1, got {args.seeds}")
        if getattr(args, "workers", 1) < 1:
            raise UsageError(f"--workers must be >= 1, got {args.workers}")
        if args.command == "reproduce" and args.setting not in (*REPRODUCIBLE, "all"):
            raise UsageError(f"unknown setting {args.setting!r}; valid: {', '.join(REPRODUCIBLE)}, all")
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return args.func(args)
    except UsageError as exc:
        print(f"tepa-bench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
