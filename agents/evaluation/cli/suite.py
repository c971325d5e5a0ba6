"""``tepa-bench suite``: its arguments and its command (the study: :mod:`~tepa_envs.agents.evaluation.studies.suite`)."""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable

from tepa_envs.agents.evaluation.cli.arguments import UsageError, log, output_dir, parse_methods, reader_profile_kwargs
from tepa_envs.agents.evaluation.engine.progress import progress_factory
from tepa_envs.agents.evaluation.engine.validate import validate_methods
from tepa_envs.agents.evaluation.outputs.leaderboard import format_suite, write_suite
from tepa_envs.agents.evaluation.studies.suite import DEFAULT_SEEDS, SUITE_SCENARIOS, check_notify_levels, run_suite


def cmd_suite(args: argparse.Namespace) -> int:
    """``tepa-bench suite``: see :mod:`~tepa_envs.agents.evaluation.studies.suite`."""
    methods = parse_methods(args.methods)
    unknown = [s for s in args.scenarios.split(",") if s and s not in SUITE_SCENARIOS] if args.scenarios else []
    if unknown:
        raise UsageError(f"unknown scenario(s) {', '.join(unknown)}; valid: {', '.join(SUITE_SCENARIOS)}")
    scenarios = [s for s in args.scenarios.split(",") if s] if args.scenarios else list(SUITE_SCENARIOS)
    try:
        for env_id in scenarios:
            validate_methods(env_id, {}, methods)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    try:
        levels = check_notify_levels([v for v in args.notify.split(",") if v])
    except ValueError as exc:
        raise UsageError(f"--notify: {exc}") from None
    out = output_dir(args.out)
    log(args, f"suite: {len(methods)} methods x {len(scenarios)} scenarios x {args.seeds} seeds "
                   f"x {len(levels)} notification level(s) ({args.workers} workers)")
    started = time.perf_counter()
    with progress_factory(quiet=args.quiet)("suite") as bar:
        data = run_suite(methods, range(args.seeds), scenarios=scenarios, workers=args.workers, alpha=args.alpha,
                         progress=bar, reader_kwargs=reader_profile_kwargs(args), notify=levels)
    elapsed = time.perf_counter() - started
    write_suite(data, out, elapsed_s=elapsed)
    print(format_suite(data))
    print(f"\nwrote {out}/ in {elapsed:.0f}s: suite.json, leaderboard.md (the full leaderboard: pairs,\n"
          "reversal phases, what each memory showed), metrics.md, heatmap.png, manifest.json\n"
          "what they hold: docs/results/leaderboard.md (the documentation site)\n"
          f"`tepa-bench readme {out.parent}` puts the leaderboard into the docs pages")
    return 0


def add_parser(sub: Any, common: Callable[..., None]) -> None:
    """Register ``tepa-bench suite`` on the CLI's subparsers (``common`` adds --seeds, --workers, ...)."""
    suite = sub.add_parser("suite", help="every registered method on every drift scenario, and a leaderboard")
    suite.add_argument("--methods", default="all",
                       help="comma-separated names or import paths 'package.module:ClassName'; 'all' (the "
                            "default) for every registered method, e.g. 'all,mypkg.mem:MyMemory'")
    suite.add_argument("--scenarios", default="",
                       help="comma-separated scenario ids (default: all of " + ", ".join(SUITE_SCENARIOS) + ")")
    suite.add_argument("--notify", default="none", metavar="LEVELS",
                       help="comma-separated change-notification levels (none, detected, known); the leaderboard "
                            "is at the first; with more than one, every method and the notification options "
                            "(lww on_notify=clear, tepa on_notify=revoke, ...) also run at each level for a "
                            "table by level (default: none)")
    common(suite, DEFAULT_SEEDS, outputs="suite.json, leaderboard.md, metrics.md, heatmap.png (default results/suite)")
    suite.set_defaults(func=cmd_suite, out="results/suite")


__all__ = ["add_parser", "cmd_suite"]
