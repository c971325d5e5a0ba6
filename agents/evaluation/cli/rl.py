"""``tepa-bench rl``: its arguments and its command (the study: :mod:`~tepa_envs.agents.evaluation.studies.rl_study`).

    tepa-bench rl [SPEC.toml] [--quick | --size quick|medium|default] [--engine sb3|rllib]
                  [--store PATH] [--out DIR] [--workers K] [--address ADDR] [--dry-run] [--readme] [--root DIR]

Without a spec the built-in size runs (``default``: about an hour on 2 cores).
``--engine`` picks the learning library (``sb3``, the default, or ``rllib``; over a
spec file's ``engine``); the ``rllib`` engine runs its units as Ray tasks on a local
Ray with ``--workers`` CPUs or on the cluster at ``--address``. Both engines' units
can share one store: each engine's units are its own, so each resumes on its own.
Results go to the store (default ``OUT/rl_store.db``) unit by unit, so a rerun of
the same command resumes where a killed one stopped and a rerun of a finished
one only rewrites the files. ``--readme`` also writes the ``rl-study`` block of
``docs/rl.md`` (under ``--root``, default ``.``) and copies the curves beside it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path
from typing import Any

from tepa_envs.agents.evaluation.cli.arguments import UsageError, log, output_dir
from tepa_envs.agents.evaluation.engine.progress import progress_factory
from tepa_envs.agents.evaluation.engine.store import Store
from tepa_envs.agents.evaluation.outputs.blocks import write_block
from tepa_envs.agents.evaluation.outputs.files import begin_run
from tepa_envs.agents.evaluation.studies.rl_agents import ENGINES
from tepa_envs.agents.evaluation.studies.rl_outputs import BLOCK, markdown, write_rl
from tepa_envs.agents.evaluation.studies.rl_study import (
    SIZES, RLSpec, analyse, builtin_spec, finished_units, load_rl_spec, prepare_store, read_units, run_study,
)

DOCS_FIGURE = "docs/rl_curves.png"
"""Where ``--readme`` copies ``curves.png`` (relative to ``--root``), beside ``docs/rl.md``."""


def spec_of(args: argparse.Namespace) -> RLSpec:
    """The study the command line names: a spec file, or a built-in size."""
    try:
        if args.spec:
            if args.quick or args.size:
                raise UsageError("give a spec file or --quick/--size, not both")
            return load_rl_spec(args.spec, engine=args.engine)
        return builtin_spec("quick" if args.quick else (args.size or "default"), engine=args.engine or "sb3")
    except (TypeError, ValueError) as exc:
        if isinstance(exc, UsageError):
            raise
        raise UsageError(str(exc).splitlines()[0]) from None


def cmd_rl(args: argparse.Namespace) -> int:
    """``tepa-bench rl``: see :mod:`~tepa_envs.agents.evaluation.studies.rl_study`."""
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    spec = spec_of(args)
    for note in spec.notes:
        print(f"note: {note}")
    units = len(spec.jobs())
    if args.dry_run:
        print(f"{spec.name}: {len(spec.agents)} agents x {len(spec.envs)} environments x "
              f"{len(spec.train_seeds)} training seeds = {units} units of {spec.timesteps:,} steps "
              f"(engine {spec.engine})")
        return 0
    out = output_dir(args.out)
    store_path = Path(args.store) if args.store else out / "rl_store.db"
    started = time.perf_counter()
    with Store.open(store_path) as store:
        prepare_store(store)
        done = len(finished_units(store, spec))
        log(args, f"rl: {units} units of engine {spec.engine} ({done} already in {store_path}), "
                  f"{args.workers} workers" + (f" on the Ray cluster at {args.address}" if args.address else ""))
        with progress_factory(quiet=args.quiet)("rl units") as bar:
            outcome = run_study(spec, store, workers=args.workers, address=args.address, progress=bar)
        data: dict[str, Any] = analyse(spec, read_units(store, spec))
    data["wall_s"] = time.perf_counter() - started
    data["units"] = {"planned": outcome.planned, "skipped": outcome.skipped, "trained": outcome.trained}
    begin_run(out)
    write_rl(data, out)
    print((out / "rl.md").read_text(encoding="utf-8"))
    if args.readme:
        root = Path(args.root)
        shutil.copyfile(out / "curves.png", root / DOCS_FIGURE)
        page = write_block(BLOCK, markdown(data, figure=os.path.basename(DOCS_FIGURE)), root)
        print(f"wrote the {BLOCK} block of {page} and {root / DOCS_FIGURE}")
    print(f"wrote {out}/rl.json, rl.csv, curves.png, rl.md, manifest.json in {data['wall_s']:.0f}s "
          f"({outcome.trained} units trained, {outcome.skipped} from the store)")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``tepa-bench rl`` on the CLI's subparsers."""
    rl = sub.add_parser("rl", help="memory for RL policies: PPO with memories vs an LSTM policy, learning curves")
    rl.add_argument("spec", nargs="?", help="an RL study spec (TOML; see docs/rl.md); default: a built-in size")
    rl.add_argument("--quick", action="store_true", help="the quick size (about a minute; a smoke test)")
    rl.add_argument("--size", choices=tuple(SIZES), help="a built-in size (default: default, about an hour on 2 cores)")
    rl.add_argument("--store", help="SQLite results store (default OUT/rl_store.db); a rerun skips the units it holds")
    rl.add_argument("--engine", choices=tuple(ENGINES), help="the learning library: sb3 (Stable-Baselines3, the "
                    "default) or rllib (Ray RLlib, units as Ray tasks); over a spec file's engine")
    rl.add_argument("--workers", type=int, default=1, help="worker processes, or a local Ray's CPUs for the rllib "
                    "engine (default 1); results do not depend on it")
    rl.add_argument("--address", help="run the units as Ray tasks on the Ray cluster at this address "
                    "(any engine; default: local processes for sb3, a local Ray for rllib)")
    rl.add_argument("--dry-run", action="store_true", help="print the units, run nothing")
    rl.add_argument("--readme", action="store_true", help="also write the rl-study block of docs/rl.md and "
                    "copy the curves to docs/rl_curves.png (under --root)")
    rl.add_argument("--root", default=".", help="the checkout holding README.md and docs/ (default .)")
    rl.add_argument("--out", default="results/rl", help="directory for rl.json, rl.csv, curves.png, rl.md, "
                    "manifest.json (default results/rl)")
    rl.add_argument("--quiet", action="store_true", help="no progress bar; log lines on stderr")
    rl.set_defaults(func=cmd_rl)


__all__ = ["DOCS_FIGURE", "add_parser", "cmd_rl", "spec_of"]
