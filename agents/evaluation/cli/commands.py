"""The ``tepa-bench`` commands but ``suite``: reproduce, readme, run, sweep, report, list, clean."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import gymnasium as gym

from tepa_envs.agents.evaluation.analysis.paper import REPRODUCIBLE, SETTINGS, Setting
from tepa_envs.agents.evaluation.analysis.results import Summary
from tepa_envs.agents.evaluation.analysis.settings import front_end_differences
from tepa_envs.agents.evaluation.analysis.summary import summarize
from tepa_envs.agents.evaluation.cli.arguments import (
    UsageError, log, output_dir, parse_json_object, parse_methods, reader_profile_kwargs,
)
from tepa_envs.agents.evaluation.engine.backends import LocalBackend, make_backend
from tepa_envs.agents.evaluation.engine.progress import progress_factory, stage_logger
from tepa_envs.agents.evaluation.engine.spec import Statistics, load_spec, single_group_spec
from tepa_envs.agents.evaluation.engine.store import Store
from tepa_envs.agents.evaluation.engine.sweep import (
    cleanup_temp_stores, describe_cells, evaluate_through_store, execute, format_rate, stored_episodes,
)
from tepa_envs.agents.evaluation.engine.validate import check_env_id, env_kwarg_names, validate_methods
from tepa_envs.agents.evaluation.outputs.blocks import BlockError
from tepa_envs.agents.evaluation.outputs.facts_tables import format_facts_table
from tepa_envs.agents.evaluation.outputs.files import ManifestError, begin_run, write_manifest
from tepa_envs.agents.evaluation.outputs.readme import update_readme
from tepa_envs.agents.evaluation.outputs.report import format_drift_table, format_table, write_results
from tepa_envs.agents.evaluation.outputs.view_tables import format_view_table
from tepa_envs.agents.evaluation.outputs.store_report import write_report
from tepa_envs.agents.evaluation.studies.protocol import FULL, QUICK, STANDARD, Protocol, protocol_name
from tepa_envs.agents.evaluation.studies.reproduce import reproduce_all, reproduce_setting
from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.file_ops.sandbox import default_sandbox_dirs, reclaim_orphans


@contextlib.contextmanager
def _run_store(args: argparse.Namespace, out: Path | None) -> Iterator[Any]:
    """The store ``tepa-bench run`` writes through: ``--store``, else a temporary one in
    ``--out`` (removed when the run ends), else one in memory."""

    if args.store:
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

    log(args, f"{label}: {len(methods)} methods x {args.seeds} seeds on {env_id} ({args.workers} workers)")
    reader_kwargs = args.reader_kwargs_parsed or {}
    spec = single_group_spec(env_id, env_kwargs, methods, range(args.seeds), reader_kwargs,
                             Statistics(alpha=args.alpha), name=label)
    with _run_store(args, out) as store:  # `run` and `sweep` share one path: episodes go through a store
        try:
            evaluation = evaluate_through_store(store, spec, LocalBackend(args.workers),
                                                progress=not args.quiet,
                                                command=["tepa-bench", *args.argv])
        except KeyboardInterrupt:
            if args.store:
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
    print()
    print(format_view_table(results))
    for method, kwargs in front_end_differences(env_id, methods).items():
        print(f"front-end difference: {method} built with {kwargs} on {env_id}")
    if out is not None:
        output_dir(out)
        begin_run(out)  # no manifest while the directory mixes this run's files with an older run's
        written = write_results(results, out, setting)
        write_manifest(out, written, seeds=results.seeds, methods=results.methods, env_id=env_id,
                       env_kwargs=env_kwargs, reader_kwargs=reader_kwargs, alpha=args.alpha)
        log(args, f"wrote {out / 'results.json'}, {', '.join(w for w in written if w != 'results.json')}, "
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
    out = output_dir(args.out)
    for name in names:
        output_dir(out / name)
    started = time.perf_counter()
    stage_log = stage_logger()
    progress = progress_factory(quiet=args.quiet)
    for name in names:
        if name == "facts":
            reproduce_all(["facts"], protocol, out, workers=args.workers, log=stage_log, progress=progress,
                          facts_local_lm=bool(args.local_lm))
            print("\n== facts ==")
            print(format_facts_table(json.loads((out / "facts" / "results.json").read_text())))
            stage_log(f"facts: wrote {out / 'facts'}/ (results.json, manifest.json)")
            continue
        summary = reproduce_setting(name, protocol, out / name, workers=args.workers, alpha=args.alpha,
                                    log=stage_log, progress=progress, reader_kwargs=reader_profile_kwargs(args))
        print(f"\n== {name}: {SETTINGS[name].env_id} ({len(summary.seeds)} seeds, "
              f"{protocol_name(protocol)} protocol) ==")
        print(format_table(summary, SETTINGS[name]))
        files = sorted(p.name for p in (out / name).iterdir() if not p.name.startswith("."))
        stage_log(f"{name}: wrote {out / name}/ ({', '.join(files)})")
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
    except BlockError as exc:
        raise UsageError(str(exc)) from None
    print(f"updated {len(replaced)} tables in {readme} and the pages of {readme.parent / 'docs'}: "
          f"{', '.join(replaced) or 'none'} (docs: docs/results/index.md)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    try:
        check_env_id(args.env_id)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    methods = parse_methods(args.methods)
    env_kwargs = parse_json_object("--env-kwargs", args.env_kwargs)
    args.reader_kwargs_parsed = parse_json_object("--reader-kwargs", args.reader_kwargs)
    if args.reader != "simulated":  # the reader's name travels in its kwargs (factory.READER_KEY), into results.json
        args.reader_kwargs_parsed = {"reader": args.reader, **args.reader_kwargs_parsed}
    args.reader_kwargs_parsed = reader_profile_kwargs(args, args.reader_kwargs_parsed)
    unknown = sorted(set(env_kwargs) - set(env_kwarg_names(args.env_id)))
    if unknown:
        raise UsageError(f"unknown kwargs for {args.env_id}: {', '.join(unknown)}; "
                         f"valid: {', '.join(env_kwarg_names(args.env_id))}")
    try:
        validate_methods(args.env_id, env_kwargs, methods, args.reader_kwargs_parsed)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    out = output_dir(args.out) if args.out else None
    if args.store:
        _check_store(args.store)
    _evaluate_and_write(args, args.env_id, methods, env_kwargs, out, None, "run")
    return 0


def _check_store(path: str, create: bool = True) -> None:
    """Open and close the store at ``path``: a newer schema or a non-store is refused before any work."""
    Store.open(path, create=create).close()


def cmd_sweep(args: argparse.Namespace) -> int:
    """``tepa-bench sweep SPEC.toml --store DB``: run the spec's episodes the store lacks."""
    spec = load_spec(args.spec)
    if args.reader_profile is not None:
        spec = replace(spec, cells=tuple(replace(cell, reader_kwargs=reader_profile_kwargs(args, cell.reader_kwargs))
                                         for cell in spec.cells))
    resume = f"tepa-bench sweep {args.spec} --store {args.store}" + (
        f" --reader-profile {args.reader_profile}" if args.reader_profile is not None else "")
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
    out = output_dir(args.out) if args.out else None
    backend = make_backend(args.backend, args.workers, args.ray_address)
    with Store.open(args.store) as store:
        def started(where: str, to_run: int, already: int) -> None:
            log(args, f"{spec.name}: {to_run:,} episodes to run on {where} ({already:,} already in {args.store})")

        outcome = execute(store, spec, backend, progress=not args.quiet,
                          batch_size=args.batch, command=["tepa-bench", *args.argv],
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
            print_group(group, summary, out)
    return 0


def print_group(group: Any, summary: Summary, out: Path) -> None:
    """One reported group on the terminal: where its files went, success, drift and view tables."""
    print(f"\n== {group.env_id} {group.env_kwargs or ''} {group.reader_kwargs or ''} "
          f"({len(group.seeds)} seeds) -> {out / group.directory} ==")
    print(format_table(summary))
    print()
    print(format_drift_table(summary))
    print()
    print(format_view_table(summary))


def cmd_report(args: argparse.Namespace) -> int:
    """``tepa-bench report DB --out DIR``: results.json/csv/png (and drift_metrics.csv) per group, from the store."""
    store = Store.open(args.store, create=False)
    try:
        out = output_dir(args.out)
        statistics = store.statistics()
        if args.alpha is not None:
            statistics = replace(statistics, alpha=args.alpha)
        if args.n_perm is not None:
            if args.n_perm < 1:
                raise UsageError(f"--n-perm must be >= 1, got {args.n_perm}")
            statistics = replace(statistics, n_perm=args.n_perm)
        for group, summary in write_report(store, out, statistics, log=lambda m: print(m, file=sys.stderr)):
            print_group(group, summary, out)
    finally:
        store.close()
    return 0


def cmd_store_check(args: argparse.Namespace) -> int:
    """``tepa-bench store check PATH``: SQLite's integrity check and every row validated;
    0 when the store is sound, else 2 with the first problems listed (one per line)."""
    if args.limit < 1:
        raise UsageError(f"--limit must be >= 1, got {args.limit}")
    store = Store.open(args.path, create=False, check=False)
    try:
        problems = store.check(limit=args.limit)
        if not problems:
            cells = len(store.cells())
            print(f"{args.path}: sound (integrity_check ok; {cells:,} cells, {store.count():,} episodes, "
                  "every row valid)")
            return 0
    finally:
        store.close()
    print(f"tepa-bench: error: {args.path} is damaged: {problems[0]}"
          + (f" ({len(problems)}{'+' if len(problems) >= args.limit else ''} problems; all listed below)"
             if len(problems) > 1 else ""), file=sys.stderr)
    if len(problems) > 1:
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
    return 2


def cmd_list(args: argparse.Namespace) -> int:
    print("environments: " + ", ".join(sorted(i for i in gym.envs.registry if i.startswith("TEPA/"))))
    print("methods: " + ", ".join(METHOD_NAMES))
    print("settings: " + ", ".join(REPRODUCIBLE) + ", all")
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    """``tepa-bench clean [--dir DIR]``: remove the sandboxes of dead processes (a
    process killed with SIGKILL, say); prints each one removed, and what it could not
    remove (exit status 1 then)."""

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


__all__ = ["cmd_clean", "cmd_list", "cmd_readme", "cmd_report", "cmd_reproduce", "cmd_run", "cmd_store_check",
           "cmd_sweep"]
