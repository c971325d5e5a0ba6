"""``tepa-bench``: evaluate memory methods on TEPA environments with paired statistics.

    tepa-bench reproduce controlled|executable|preference|facts|all [--seeds N] [--workers K] [--out DIR]
                         [--alpha A]
    tepa-bench run ENV_ID --methods tepa,lww,my.pkg:MyMemory [--seeds N] [--workers K] [--out DIR] [--alpha A]
    tepa-bench list
    tepa-bench --version
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import gymnasium as gym

from tepa_envs.agents.evaluation.files import (
    ManifestError,
    OutputDirError,
    begin_run,
    prepare_output_dir,
    write_manifest,
)
from tepa_envs.agents.evaluation.harness import JobError, check_env_id, evaluate, summarize, validate_methods
from tepa_envs.agents.evaluation.settings import (
    REPRODUCIBLE,
    SETTINGS,
    Setting,
    front_end_differences,
)
from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.agents.evaluation.facts import format_facts_table
from tepa_envs.agents.evaluation.protocol import QUICK, Protocol
from tepa_envs.agents.evaluation.readme import update_readme
from tepa_envs.agents.evaluation.report import format_table, write_results
from tepa_envs.agents.evaluation.reproduce import reproduce_all, reproduce_setting
from tepa_envs.agents.evaluation.results import Summary


MAX_SEEDS = 1_000_000
"""Largest ``--seeds``: a million seeds is far beyond any precision the protocol needs."""


class UsageError(Exception):
    """A bad command line: reported in one line with exit status 2."""


def _output_dir(path: str | Path) -> Path:
    """``--out``, created and checked to be a writable directory before any work."""
    try:
        return prepare_output_dir(path)
    except OutputDirError as exc:
        raise UsageError(f"--out: {exc}") from None


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
    results = summarize(evaluation, alpha=args.alpha)
    if setting is not None:
        results = results.with_setting(setting)
    print(f"\n== {label}: {env_id} {env_kwargs or ''} {reader_kwargs or ''} "
          f"({args.seeds} seeds, {evaluation.elapsed_s:.1f}s) ==")
    print(format_table(results, setting))
    for method, kwargs in front_end_differences(env_id, methods).items():
        print(f"front-end difference: {method} built with {kwargs} on {env_id}")
    if out is not None:
        _output_dir(out)
        begin_run(out)  # no manifest while the directory mixes this run's files with an older run's
        written = write_results(results, out, setting)
        write_manifest(out, written, seeds=results.seeds, methods=results.methods, env_id=env_id,
                       env_kwargs=env_kwargs, reader_kwargs=reader_kwargs, alpha=args.alpha)
        _log(args, f"wrote {out / 'results.json'}, results.csv, success.png, manifest.json")
    return results


def cmd_reproduce(args: argparse.Namespace) -> int:
    names = list(REPRODUCIBLE) if args.setting == "all" else [args.setting]
    protocol = QUICK if args.quick else Protocol()
    if args.seeds is not None:
        protocol = replace(protocol, seeds=args.seeds, max_seeds=max(args.seeds, protocol.max_seeds))
    out = _output_dir(args.out)
    for name in names:
        _output_dir(out / name)
    started = time.perf_counter()
    for name in names:
        if name == "facts":
            reproduce_all(["facts"], protocol, out, workers=args.workers, log=lambda m: _log(args, m))
            print("\n== facts ==")
            print(format_facts_table(json.loads((out / "facts" / "results.json").read_text())))
            continue
        summary = reproduce_setting(name, protocol, out / name, workers=args.workers, alpha=args.alpha,
                                    log=lambda m: _log(args, m))
        print(f"\n== {name}: {SETTINGS[name].env_id} ({len(summary.seeds)} seeds) ==")
        print(format_table(summary, SETTINGS[name]))
    print(f"\nwrote {out}/ in {time.perf_counter() - started:.0f}s; "
          f"`tepa-bench readme {out}` regenerates the README's tables from it")
    return 0


def cmd_readme(args: argparse.Namespace) -> int:
    results_dir, readme = Path(args.results), Path(args.readme)
    if not results_dir.is_dir():
        raise UsageError(f"{results_dir} is not a directory written by `tepa-bench reproduce`")
    if not readme.is_file():
        raise UsageError(f"{readme} is not a file")
    try:
        replaced = update_readme(readme, results_dir)
    except ManifestError as exc:
        raise UsageError(f"{results_dir} is not a complete run: {exc}") from None
    print(f"updated {len(replaced)} tables in {readme}: {', '.join(replaced) or 'none'}")
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
    out = _output_dir(args.out) if args.out else None
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


def installed_version() -> str:
    """The installed distribution's version (``importlib.metadata``); the package's
    ``__version__`` when it is imported from a checkout that is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tepa-envs")
    except PackageNotFoundError:
        import tepa_envs

        return tepa_envs.__version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tepa-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tepa-bench {installed_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, default_seeds: int | None) -> None:
        p.add_argument("--seeds", type=int, default=default_seeds,
                       help=(f"number of seeds (0..N-1), at most {MAX_SEEDS:,}" if default_seeds is not None else
                             "seeds before the precision rule extends them (default: the protocol's 1,000; "
                             f"at most {MAX_SEEDS:,})"))
        p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                       help="worker processes; results do not depend on it")
        p.add_argument("--out", help="directory for results.json, results.csv, success.png and manifest.json "
                                    "(written last: sha256 of every file; created if missing, checked before "
                                    "any work)")
        p.add_argument("--quiet", action="store_true", help="no progress bar; log lines on stderr")
        p.add_argument("--alpha", type=float, default=0.05,
                       help="significance level: a comparison is significant when its Holm–Bonferroni "
                            "adjusted p-value (over all comparisons of the run) is below ALPHA; "
                            "recorded in results.json (default: %(default)s)")

    reproduce = sub.add_parser("reproduce", help="run the benchmark protocol behind the README's tables")
    reproduce.add_argument("setting", help="one of: " + ", ".join(REPRODUCIBLE) + ", all")
    common(reproduce, None)
    reproduce.add_argument("--quick", action="store_true",
                           help="a tiny protocol for smoke tests (20 seeds); its numbers are not headline numbers")
    reproduce.set_defaults(func=cmd_reproduce, out="results")

    readme = sub.add_parser("readme", help="regenerate the README's tables from a reproduce directory")
    readme.add_argument("results", help="the --out directory of `tepa-bench reproduce all`")
    readme.add_argument("--readme", default="README.md", help="the README to update (default README.md)")
    readme.set_defaults(func=cmd_readme, quiet=False)

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

    clean = sub.add_parser("clean", help="remove FileOps sandboxes left behind by processes that are gone")
    clean.add_argument("--dir", action="append",
                       help="directory to scan (repeatable; default: /dev/shm when usable and the temp dir)")
    clean.set_defaults(func=cmd_clean, quiet=False)
    return parser


def cmd_clean(args: argparse.Namespace) -> int:
    """``tepa-bench clean [--dir DIR]``: remove the sandboxes of dead processes (a
    process killed with SIGKILL, say); prints each one removed, and what it could not
    remove (exit status 1 then)."""
    from tepa_envs.file_ops.sandbox import default_sandbox_dirs, reclaim_orphans

    dirs = args.dir or default_sandbox_dirs()
    missing = [d for d in dirs if not os.path.isdir(d)]
    if missing:
        raise UsageError(f"--dir {missing[0]!r} is not a directory")
    removed = incomplete = 0
    for directory in dirs:
        for orphan in reclaim_orphans(directory):
            if orphan.removed:
                removed += 1
                print(f"removed {orphan.path} (owner pid {orphan.pid} is gone)")
            else:
                incomplete += 1
                left = "; ".join(f"{rel}: {reason}" for rel, reason in orphan.left[:10])
                print(f"could not fully remove {orphan.path} (owner pid {orphan.pid} is gone): {left}")
    print(f"scanned {', '.join(dirs)}: {removed} removed, {incomplete} not fully removed")
    return 1 if incomplete else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if getattr(args, "seeds", None) is not None and not 1 <= args.seeds <= MAX_SEEDS:
            raise UsageError(f"--seeds must be between 1 and {MAX_SEEDS:,}, got {args.seeds}")
        if getattr(args, "workers", 1) < 1:
            raise UsageError(f"--workers must be >= 1, got {args.workers}")
        if not 0.0 < getattr(args, "alpha", 0.05) < 1.0:
            raise UsageError(f"--alpha must be in (0, 1), got {args.alpha}")
        if args.command == "reproduce" and args.setting not in (*REPRODUCIBLE, "all"):
            raise UsageError(f"unknown setting {args.setting!r}; valid: {', '.join(REPRODUCIBLE)}, all")
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return args.func(args)
    except UsageError as exc:
        print(f"tepa-bench: error: {exc}", file=sys.stderr)
        return 2
    except JobError as exc:  # a method (or environment) raised inside a job: one line, not a pool traceback
        print(f"tepa-bench: error: {exc}", file=sys.stderr)
        return 1
    except BrokenProcessPool as exc:
        print(f"tepa-bench: error: a worker process died ({exc})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
