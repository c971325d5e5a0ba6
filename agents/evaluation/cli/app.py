"""``tepa-bench``'s parser and entry point: every command, and one-line errors with exit statuses."""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import threading
from concurrent.futures.process import BrokenProcessPool
from importlib.metadata import PackageNotFoundError, version
from typing import Sequence

import tepa_envs
from tepa_envs.agents.readers.profile import shipped_profiles
from tepa_envs.agents.evaluation.analysis.paper import REPRODUCIBLE
from tepa_envs.agents.evaluation.cli.arguments import MAX_SEEDS, UsageError
from tepa_envs.agents.evaluation.cli.commands import (
    cmd_clean, cmd_list, cmd_readme, cmd_report, cmd_reproduce, cmd_run, cmd_store_check, cmd_sweep,
)
from tepa_envs.agents.evaluation.cli.calibrate import add_parser as add_calibrate_parser
from tepa_envs.agents.evaluation.cli.suite import add_parser as add_suite_parser
from tepa_envs.agents.evaluation.cli.rl import add_parser as add_rl_parser
from tepa_envs.agents.evaluation.engine.backends import BackendError
from tepa_envs.agents.evaluation.engine.pool import JobError
from tepa_envs.agents.evaluation.engine.spec import SpecError
from tepa_envs.agents.evaluation.engine.store import StoreError
from tepa_envs.agents.evaluation.outputs.files import release_output_dir
from tepa_envs.file_ops.sandbox import install_sigterm_cleanup, remove_sigterm_cleanup

USAGE = """``tepa-bench``: evaluate memory methods on TEPA environments with paired statistics.

    tepa-bench reproduce controlled|executable|preference|facts|all [--quick|--full] [--seeds N] [--workers K]
                         [--out DIR] [--alpha A] [--reader-profile NAME|FILE]
    tepa-bench run ENV_ID --methods tepa,lww,my.pkg:MyMemory [--seeds N] [--workers K] [--out DIR] [--alpha A]
                   [--store results.db] [--reader simulated|local-lm|openai] [--reader-profile NAME|FILE]
    tepa-bench sweep SPEC.toml --store results.db [--backend local|ray] [--workers K] [--ray-address ADDR]
                     [--dry-run] [--out DIR] [--reader-profile NAME|FILE]
    tepa-bench report results.db --out DIR [--alpha A]
    tepa-bench store check results.db
    tepa-bench suite [--seeds N] [--workers K] [--out DIR] [--alpha A] [--methods all,my.pkg:MyMemory]
                     [--reader-profile NAME|FILE]
    tepa-bench calibrate [--reader local-lm|openai|simulated] [--reader-kwargs JSON] --decisions N --out PROFILE.toml
    tepa-bench readme RESULTS_DIR [--readme README.md]
    tepa-bench rl [SPEC.toml] [--quick|--size quick|medium|default] [--workers K] [--out DIR] [--store DB]
    tepa-bench list
    tepa-bench clean [--dir DIR]
    tepa-bench --version
"""


def installed_version() -> str:
    """The installed distribution's version (``importlib.metadata``); the package's
    ``__version__`` when it is imported from a checkout that is not installed."""
    try:
        return version("tepa-envs")
    except PackageNotFoundError:
        return tepa_envs.__version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tepa-bench", description=USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tepa-bench {installed_version()}")
    # every command's namespace carries the options the shared code reads, at their "not given"
    # values, so no command's code asks a namespace whether it has one
    parser.set_defaults(seeds=None, workers=1, alpha=None, store=None, local_lm=False, reader_profile=None,
                        reader_kwargs_parsed=None, argv=())
    sub = parser.add_subparsers(dest="command", required=True)

    def add_reader_profile(p: argparse.ArgumentParser) -> None:
        p.add_argument("--reader-profile", metavar="NAME|FILE",
                       help="read with the simulated reader under this reader profile: "
                            f"{', '.join(shipped_profiles())} or a .toml/.json file; its parameters are "
                            "recorded in the reader kwargs of results.json and of every cell identity "
                            "(default: the settings' reader, i.e. the 'default' profile)")

    def common(p: argparse.ArgumentParser, default_seeds: int | None,
               outputs: str = "results.json, results.csv, drift_metrics.csv, success.png") -> None:
        p.add_argument("--seeds", type=int, default=default_seeds,
                       help=(f"number of seeds (0..N-1), at most {MAX_SEEDS:,}" if default_seeds is not None else
                             "seeds before the precision rule extends them (default: the protocol's 1,000; "
                             f"at most {MAX_SEEDS:,})"))
        p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                       help="worker processes; results do not depend on it")
        p.add_argument("--out", help=f"directory for {outputs} and manifest.json "
                                    "(written last: sha256 of every file; created if missing, checked before "
                                    "any work)")
        p.add_argument("--quiet", action="store_true", help="no progress bar; log lines on stderr")
        add_reader_profile(p)
        p.add_argument("--alpha", type=float, default=0.05,
                       help="significance level: a comparison is significant when its Holm–Bonferroni "
                            "adjusted p-value (over all comparisons of the run) is below ALPHA; "
                            "recorded in results.json (default: %(default)s)")

    reproduce = sub.add_parser("reproduce", help="run the benchmark protocol behind the README's tables")
    reproduce.add_argument("setting", help="one of: " + ", ".join(REPRODUCIBLE) + ", all")
    common(reproduce, None, outputs="one subdirectory per setting (results.json, results.csv, drift_metrics.csv, "
                                  "success.png, the side studies' JSON)")
    reproduce.add_argument("--quick", action="store_true",
                           help="a tiny protocol for smoke tests (20 seeds); its numbers are not headline numbers")
    reproduce.add_argument("--full", action="store_true",
                           help="the full benchmark protocol behind the README's tables (1,000+ seeds to a 95%% "
                                "half-width of 0.015, 200 seeds per reader setting and profile). Default: the "
                                "standard size (300 seeds; controlled: about a minute)")
    reproduce.add_argument("--local-lm", action="store_true",
                           help="facts: also score every method under the local-lm question reader "
                                "(the packaged SmolLM2 reads each hop; first questions of each cell only)")
    reproduce.set_defaults(func=cmd_reproduce, out="results")

    readme = sub.add_parser("readme", help="regenerate the result tables of the README and docs/ from a reproduce directory")
    readme.add_argument("results", help="the --out directory of `tepa-bench reproduce all`")
    readme.add_argument("--readme", default="README.md", help="the README to update; the pages under docs/ beside it too (default README.md)")
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
    add_calibrate_parser(sub, add_reader_profile)
    add_rl_parser(sub)

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
    add_reader_profile(sweep)
    sweep.set_defaults(func=cmd_sweep)

    report = sub.add_parser("report", help="results.json, results.csv, success.png per group, from a store")
    report.add_argument("store", help="a SQLite store written by `tepa-bench sweep` or `run --store`")
    report.add_argument("--out", required=True, help="directory for the files (one directory per group when the "
                        "store holds several)")
    report.add_argument("--alpha", type=float, default=None,
                        help="significance level (default: the latest sweep's, 0.05 unless its spec says)")
    report.add_argument("--n-perm", type=int, default=None, help="Monte Carlo sign patterns (default: the spec's)")
    report.set_defaults(func=cmd_report, quiet=False)

    store = sub.add_parser("store", help="inspect a results store")
    store_sub = store.add_subparsers(dest="store_command", required=True)
    store_check = store_sub.add_parser("check", help="SQLite integrity check and every row validated: exit 0 when "
                                       "the store is sound, 2 with its first problems listed")
    store_check.add_argument("path", help="a SQLite store written by `tepa-bench sweep` or `run --store`")
    store_check.add_argument("--limit", type=int, default=20, help="problems listed at most (default: %(default)s)")
    store_check.set_defaults(func=cmd_store_check, quiet=False)

    listing = sub.add_parser("list", help="list environments, methods and settings")
    listing.set_defaults(func=cmd_list, quiet=False)

    clean = sub.add_parser("clean", help="remove FileOps sandboxes left behind by processes that are gone")
    clean.add_argument("--dir", action="append",
                       help="directory to scan (repeatable; default: /dev/shm when usable and the temp dir)")
    clean.set_defaults(func=cmd_clean, quiet=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if args.seeds is not None and not 1 <= args.seeds <= MAX_SEEDS:
            raise UsageError(f"--seeds must be between 1 and {MAX_SEEDS:,}, got {args.seeds}")
        if args.workers < 1:
            raise UsageError(f"--workers must be >= 1, got {args.workers}")
        if args.alpha is not None and not 0.0 < args.alpha < 1.0:
            raise UsageError(f"--alpha must be in (0, 1), got {args.alpha}")
        if args.command == "reproduce" and args.setting not in (*REPRODUCIBLE, "all"):
            raise UsageError(f"unknown setting {args.setting!r}; valid: {', '.join(REPRODUCIBLE)}, all")
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        # FileOps sandboxes removed on SIGTERM too (the environment installs no handler itself);
        # only from the main thread, and only for the command's length
        cleanup = threading.current_thread() is threading.main_thread() and install_sigterm_cleanup()
        try:
            return args.func(args)
        finally:
            release_output_dir()  # the --out locks taken by output_dir()
            if cleanup:
                remove_sigterm_cleanup()
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
    except sqlite3.DatabaseError as exc:  # a SQLite file met outside a Store (which says which file)
        print(f"tepa-bench: error: SQLite: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


__all__ = ["USAGE", "build_parser", "installed_version", "main"]
