"""``tepa-bench``: evaluate memory methods on TEPA environments with paired statistics.

    tepa-bench reproduce controlled|executable|preference|facts|all [--seeds N] [--workers K] [--out DIR]
                         [--alpha A]
    tepa-bench run ENV_ID --methods tepa,lww,my.pkg:MyMemory [--seeds N] [--workers K] [--out DIR] [--alpha A]
                   [--store results.db]
    tepa-bench sweep SPEC.toml --store results.db [--backend local|ray] [--workers K] [--ray-address ADDR]
                     [--dry-run] [--out DIR]
    tepa-bench report results.db --out DIR [--alpha A]
    tepa-bench suite [--seeds N] [--workers K] [--out DIR] [--alpha A] [--methods all,my.pkg:MyMemory]
    tepa-bench list
    tepa-bench --version
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import sys
import time
import uuid
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Sequence

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
from tepa_envs.agents.evaluation.progress import progress_factory, stage_logger
from tepa_envs.agents.evaluation.protocol import FULL, QUICK, STANDARD, Protocol, protocol_name
from tepa_envs.agents.evaluation.readme import update_readme
from tepa_envs.agents.evaluation.report import format_drift_table, format_table, write_results
from tepa_envs.agents.evaluation.reproduce import reproduce_all, reproduce_setting
from tepa_envs.agents.evaluation.results import Summary
from tepa_envs.agents.evaluation.suite import add_parser as add_suite_parser


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


@contextlib.contextmanager
def _run_store(args: argparse.Namespace, out: Path | None) -> Iterator[Any]:
    """The store ``tepa-bench run`` writes through: ``--store``, else a temporary one in
    ``--out`` (removed when the run ends), else one in memory."""
    from tepa_envs.agents.evaluation.store import Store
    from tepa_envs.agents.evaluation.sweep import cleanup_temp_stores

    if getattr(args, "store", None):
        with Store.open(args.store) as store:
            yield store
        return
    if out is None:
        with Store.open(":memory:") as store:
            yield store
        return
    cleanup_temp_stores(out)
    path = out / f".tepa-run-{os.getpid()}-{uuid.uuid4().hex[:8]}.db"
    try:
        with Store.open(path) as store:
            yield store
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{suffix}")


def _evaluate_and_write(args: argparse.Namespace, env_id: str, methods: list[str],
                        env_kwargs: dict[str, Any], out: Path | None, setting: Setting | None,
                        label: str) -> Summary:
    from tepa_envs.agents.evaluation.backends import LocalBackend
    from tepa_envs.agents.evaluation.spec import Statistics, single_group_spec
    from tepa_envs.agents.evaluation.sweep import evaluate_through_store

    _log(args, f"{label}: {len(methods)} methods x {args.seeds} seeds on {env_id} ({args.workers} workers)")
    reader_kwargs = getattr(args, "reader_kwargs_parsed", {})
    spec = single_group_spec(env_id, env_kwargs, methods, range(args.seeds), reader_kwargs,
                             Statistics(alpha=args.alpha), name=label)
    with _run_store(args, out) as store:  # `run` and `sweep` share one path: episodes go through a store
        try:
            evaluation = evaluate_through_store(store, spec, LocalBackend(args.workers),
                                                progress=not args.quiet,
                                                command=["tepa-bench", *getattr(args, "argv", [])])
        except KeyboardInterrupt:
            if getattr(args, "store", None):
                print(f"tepa-bench: interrupted; {store.count()} episodes are in {args.store}: rerun the same "
                      "command to resume", file=sys.stderr)
            raise
    results = summarize(evaluation, alpha=args.alpha)
    if setting is not None:
        results = results.with_setting(setting)
    print(f"\n== {label}: {env_id} {env_kwargs or ''} {reader_kwargs or ''} "
          f"({args.seeds} seeds, {evaluation.elapsed_s:.1f}s) ==")
    print(format_table(results, setting))
    print()
    print(format_drift_table(results))
    for method, kwargs in front_end_differences(env_id, methods).items():
        print(f"front-end difference: {method} built with {kwargs} on {env_id}")
    if out is not None:
        _output_dir(out)
        begin_run(out)  # no manifest while the directory mixes this run's files with an older run's
        written = write_results(results, out, setting)
        write_manifest(out, written, seeds=results.seeds, methods=results.methods, env_id=env_id,
                       env_kwargs=env_kwargs, reader_kwargs=reader_kwargs, alpha=args.alpha)
        _log(args, f"wrote {out / 'results.json'}, {', '.join(w for w in written if w != 'results.json')}, "
                   "manifest.json")
    return results


def _protocol(args: argparse.Namespace) -> Protocol:
    if args.quick and args.full:
        raise UsageError("--quick and --full exclude each other")
    protocol = QUICK if args.quick else FULL if args.full else STANDARD
    if args.seeds is not None:
        protocol = replace(protocol, seeds=args.seeds, max_seeds=max(args.seeds, protocol.max_seeds))
    return protocol


def cmd_reproduce(args: argparse.Namespace) -> int:
    names = list(REPRODUCIBLE) if args.setting == "all" else [args.setting]
    protocol = _protocol(args)
    out = _output_dir(args.out)
    for name in names:
        _output_dir(out / name)
    started = time.perf_counter()
    log = stage_logger()
    progress = progress_factory(quiet=args.quiet)
    for name in names:
        if name == "facts":
            reproduce_all(["facts"], protocol, out, workers=args.workers, log=log, progress=progress)
            print("\n== facts ==")
            print(format_facts_table(json.loads((out / "facts" / "results.json").read_text())))
            log(f"facts: wrote {out / 'facts'}/ (results.json, manifest.json)")
            continue
        summary = reproduce_setting(name, protocol, out / name, workers=args.workers, alpha=args.alpha,
                                    log=log, progress=progress)
        print(f"\n== {name}: {SETTINGS[name].env_id} ({len(summary.seeds)} seeds, "
              f"{protocol_name(protocol)} protocol) ==")
        print(format_table(summary, SETTINGS[name]))
        files = sorted(p.name for p in (out / name).iterdir() if not p.name.startswith("."))
        log(f"{name}: wrote {out / name}/ ({', '.join(files)})")
    print(f"\nwrote {out}/ in {time.perf_counter() - started:.0f}s ({protocol_name(protocol)} protocol"
          f"{'' if protocol == FULL else '; --full runs the protocol behind the README'}); "
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
    if args.reader != "simulated":  # the reader's name travels in its kwargs (factory.READER_KEY), into results.json
        args.reader_kwargs_parsed = {"reader": args.reader, **args.reader_kwargs_parsed}
    unknown = sorted(set(env_kwargs) - set(env_kwarg_names(args.env_id)))
    if unknown:
        raise UsageError(f"unknown kwargs for {args.env_id}: {', '.join(unknown)}; "
                         f"valid: {', '.join(env_kwarg_names(args.env_id))}")
    try:
        validate_methods(args.env_id, env_kwargs, methods, args.reader_kwargs_parsed)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    out = _output_dir(args.out) if args.out else None
    if getattr(args, "store", None):
        _check_store(args.store)
    _evaluate_and_write(args, args.env_id, methods, env_kwargs, out, None, "run")
    return 0


def _check_store(path: str, create: bool = True) -> None:
    """Open and close the store at ``path``: a newer schema or a non-store is refused before any work."""
    from tepa_envs.agents.evaluation.store import Store

    Store.open(path, create=create).close()


def cmd_sweep(args: argparse.Namespace) -> int:
    """``tepa-bench sweep SPEC.toml --store DB``: run the spec's episodes the store lacks."""
    from tepa_envs.agents.evaluation.backends import make_backend
    from tepa_envs.agents.evaluation.report import format_drift_table, format_table
    from tepa_envs.agents.evaluation.spec import load_spec
    from tepa_envs.agents.evaluation.store import Store
    from tepa_envs.agents.evaluation.sweep import (
        describe_cells, execute, format_rate, stored_episodes, write_report,
    )

    spec = load_spec(args.spec)
    resume = f"tepa-bench sweep {args.spec} --store {args.store}"
    if args.dry_run:
        store = Store.open(args.store, create=False) if Path(args.store).exists() else None
        try:
            for line in describe_cells(spec, store):
                print(line)
            stored = stored_episodes(spec, store)
        finally:
            if store is not None:
                store.close()
        print(f"{spec.name}: {len(spec.cells)} cells x {len(spec.seeds)} seeds = {spec.episodes:,} episodes "
              f"in {len(spec.groups())} groups; {stored:,} already in {args.store}, {spec.episodes - stored:,} to run")
        return 0
    if args.batch is not None and args.batch < 1:
        raise UsageError(f"--batch must be >= 1, got {args.batch}")
    out = _output_dir(args.out) if args.out else None
    backend = make_backend(args.backend, args.workers, args.ray_address)
    with Store.open(args.store) as store:
        def started(where: str, to_run: int, already: int) -> None:
            _log(args, f"{spec.name}: {to_run:,} episodes to run on {where} ({already:,} already in {args.store})")

        outcome = execute(store, spec, backend, progress=not args.quiet,
                          batch_size=args.batch, command=["tepa-bench", *getattr(args, "argv", [])],
                          label=spec.name, on_start=started)
        if outcome.interrupted:
            print(f"\ntepa-bench: interrupted; {outcome.already + outcome.ran:,} of {outcome.total:,} episodes are "
                  f"in {args.store}. Resume with: {resume}", file=sys.stderr)
            return 130
        if outcome.ran == 0 and outcome.already == outcome.total:
            print(f"{spec.name}: nothing to run, all {outcome.total:,} episodes are already in {args.store}")
        else:
            print(f"{spec.name}: {format_rate(outcome)} on {outcome.backend}; {outcome.already:,} were already "
                  f"stored; {outcome.total:,} episodes of the spec are in {args.store}")
        if out is None:
            print(f"report with: tepa-bench report {args.store} --out DIR")
            return 0
        for group, summary in write_report(store, out, log=lambda m: print(m, file=sys.stderr)):
            print(f"\n== {group.env_id} {group.env_kwargs or ''} {group.reader_kwargs or ''} "
                  f"({len(group.seeds)} seeds) -> {out / group.directory} ==")
            print(format_table(summary))
            print()
            print(format_drift_table(summary))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``tepa-bench report DB --out DIR``: results.json/csv/png (and drift_metrics.csv) per group, from the store."""
    from tepa_envs.agents.evaluation.report import format_drift_table, format_table
    from tepa_envs.agents.evaluation.store import Store
    from tepa_envs.agents.evaluation.sweep import write_report

    store = Store.open(args.store, create=False)
    try:
        out = _output_dir(args.out)
        statistics = store.statistics()
        if args.alpha is not None:
            statistics = replace(statistics, alpha=args.alpha)
        if args.n_perm is not None:
            if args.n_perm < 1:
                raise UsageError(f"--n-perm must be >= 1, got {args.n_perm}")
            statistics = replace(statistics, n_perm=args.n_perm)
        for group, summary in write_report(store, out, statistics, log=lambda m: print(m, file=sys.stderr)):
            print(f"\n== {group.env_id} {group.env_kwargs or ''} {group.reader_kwargs or ''} "
                  f"({len(group.seeds)} seeds) -> {out / group.directory} ==")
            print(format_table(summary))
            print()
            print(format_drift_table(summary))
    finally:
        store.close()
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
        p.add_argument("--out", help="directory for results.json, results.csv, drift_metrics.csv, success.png and "
                                    "manifest.json "
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
    reproduce.add_argument("--full", action="store_true",
                           help="the full benchmark protocol behind the README's tables (1,000+ seeds to a 95%% "
                                "half-width of 0.015; controlled: about 5 minutes on 2 cores). Default: the "
                                "standard size (400+ seeds to 0.03; controlled: about a minute)")
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
    run.add_argument("--reader", choices=("simulated", "local-lm", "openai"), default="simulated",
                     help="who reads the memory's records: the simulated EvidenceReader (default), a packaged "
                          "language model on the CPU (local-lm), or an OpenAI-compatible endpoint (openai; "
                          "--reader-kwargs '{\"model\": ..., \"base_url\": ...}')")
    run.add_argument("--reader-kwargs", help="JSON object overriding the reader's parameters for every "
                     "method alike, e.g. '{\"follow_prob\": 0.99}'")
    common(run, 10)
    run.add_argument("--store", help="SQLite results store to write through (default: a temporary one); "
                     "a rerun skips the episodes it holds, so a killed run resumes")
    run.set_defaults(func=cmd_run)

    add_suite_parser(sub, common)

    sweep = sub.add_parser("sweep", help="run a TOML sweep spec (envs x kwargs grids x methods x reader grids "
                           "x seeds) into a resumable SQLite store")
    sweep.add_argument("spec", help="the sweep spec (TOML; see the README's Sweeps section)")
    sweep.add_argument("--store", required=True, help="SQLite results store (created if missing); a rerun skips "
                       "the episodes it already holds")
    sweep.add_argument("--backend", choices=("local", "ray"), default="local",
                       help="local process pool (default) or Ray (pip install \"tepa-envs[ray]\")")
    sweep.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                       help="local worker processes, or the CPUs of a local Ray (default: the machine's cores); "
                            "results do not depend on it")
    sweep.add_argument("--ray-address", help="join this Ray cluster (default: $RAY_ADDRESS, else a local Ray)")
    sweep.add_argument("--batch", type=int, help="episodes per task (default: chosen from the sweep's size)")
    sweep.add_argument("--dry-run", action="store_true", help="print the cells and the episode count, run nothing")
    sweep.add_argument("--out", help="also write the report (as `tepa-bench report`) into this directory")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar; log lines on stderr")
    sweep.set_defaults(func=cmd_sweep)

    report = sub.add_parser("report", help="results.json, results.csv, success.png per group, from a store")
    report.add_argument("store", help="a SQLite store written by `tepa-bench sweep` or `run --store`")
    report.add_argument("--out", required=True, help="directory for the files (one directory per group when the "
                        "store holds several)")
    report.add_argument("--alpha", type=float, default=None,
                        help="significance level (default: the latest sweep's, 0.05 unless its spec says)")
    report.add_argument("--n-perm", type=int, default=None, help="Monte Carlo sign patterns (default: the spec's)")
    report.set_defaults(func=cmd_report, quiet=False)

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
    args.argv = list(sys.argv[1:] if argv is None else argv)
    from tepa_envs.agents.evaluation.backends import BackendError
    from tepa_envs.agents.evaluation.spec import SpecError
    from tepa_envs.agents.evaluation.store import StoreError

    try:
        if getattr(args, "seeds", None) is not None and not 1 <= args.seeds <= MAX_SEEDS:
            raise UsageError(f"--seeds must be between 1 and {MAX_SEEDS:,}, got {args.seeds}")
        if getattr(args, "workers", 1) < 1:
            raise UsageError(f"--workers must be >= 1, got {args.workers}")
        if getattr(args, "alpha", None) is not None and not 0.0 < args.alpha < 1.0:
            raise UsageError(f"--alpha must be in (0, 1), got {args.alpha}")
        if args.command == "reproduce" and args.setting not in (*REPRODUCIBLE, "all"):
            raise UsageError(f"unknown setting {args.setting!r}; valid: {', '.join(REPRODUCIBLE)}, all")
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return args.func(args)
    except (UsageError, SpecError, StoreError, BackendError) as exc:
        print(f"tepa-bench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tepa-bench: interrupted", file=sys.stderr)
        return 130
    except JobError as exc:  # a method (or environment) raised inside a job: one line, not a pool traceback
        print(f"tepa-bench: error: {exc}", file=sys.stderr)
        return 1
    except BrokenProcessPool as exc:
        print(f"tepa-bench: error: a worker process died ({exc})", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
