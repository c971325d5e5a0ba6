"""``tepa-bench calibrate``: measure a reader profile from any reader.

    tepa-bench calibrate --reader local-lm --decisions 50 --out smollm2.toml
    tepa-bench calibrate --reader openai --reader-kwargs '{"model": "qwen2.5-7b", "base_url": "http://HOST:8000/v1"}' \\
                         --decisions 100 --out qwen7b.toml

Puts ``--decisions`` recorded prompts of every kind (one plain record, records with
their validity shown, conflicting records, a statement in the task text that
disagrees with memory, nothing shown) to the reader, through the decision cache of
the language-model readers, and writes the measured profile (with a 95 % interval and
a count per parameter) as TOML, plus every answer as JSON lines beside it. The
profile then reads any run: ``--reader-profile FILE`` (see
:mod:`~tepa_envs.agents.readers.calibration`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable

from tepa_envs.agents.evaluation.cli.arguments import UsageError, log, parse_json_object, reader_profile_kwargs
from tepa_envs.agents.evaluation.engine.progress import progress_factory
from tepa_envs.agents.evaluation.outputs.files import write_text_atomic
from tepa_envs.agents.readers.calibration import calibrate
from tepa_envs.agents.readers.factory import READER_KEY, READER_NAMES, make_reader
from tepa_envs.agents.readers.profile import write_profile

MAX_DECISIONS = 10_000


def cmd_calibrate(args: argparse.Namespace) -> int:
    """``tepa-bench calibrate``: see the module docstring."""
    if not 1 <= args.decisions <= MAX_DECISIONS:
        raise UsageError(f"--decisions must be between 1 and {MAX_DECISIONS:,}, got {args.decisions}")
    out = Path(args.out)
    if out.suffix.lower() != ".toml":
        raise UsageError(f"--out must name a .toml file, got {out}")
    if not out.parent.is_dir():
        raise UsageError(f"--out: {out.parent} is not a directory")
    kwargs = parse_json_object("--reader-kwargs", args.reader_kwargs)
    if args.reader != "simulated":
        kwargs = {READER_KEY: args.reader, **kwargs}
    elif args.reader_profile is not None:
        kwargs = reader_profile_kwargs(args, kwargs)
    try:
        reader = make_reader(kwargs)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    name = args.name or out.stem
    source = (f"measured by tepa-bench calibrate --reader {args.reader} --decisions {args.decisions} "
              f"({reader!r}, {args.decisions} recorded decisions per kind)")
    log(args, f"calibrate: {args.decisions} decisions of each of 5 kinds from {reader!r}")
    with progress_factory(quiet=args.quiet)("calibrate") as bar:
        profile, rows = calibrate(reader, args.decisions, name=name, source=source, progress=bar)
    write_profile(profile, out)
    answers = out.with_suffix(".jsonl")
    write_text_atomic(answers, "".join(json.dumps(row) + "\n" for row in rows))
    print(profile.to_toml())
    print(f"wrote {out} (the profile: --reader-profile {out}) and {answers} (every answer)")
    return 0


def add_parser(sub: Any, add_reader_profile: Callable[[argparse.ArgumentParser], None]) -> None:
    """Register ``tepa-bench calibrate`` on the CLI's subparsers."""
    parser = sub.add_parser("calibrate", help="measure a reader profile (follow rates per kind of prompt) "
                                              "from any reader")
    parser.add_argument("--reader", choices=READER_NAMES, default="local-lm",
                        help="the reader to measure (default: %(default)s, the packaged SmolLM2-135M)")
    parser.add_argument("--reader-kwargs", help="JSON object of the reader's arguments, e.g. "
                        "'{\"model\": \"qwen2.5-7b\", \"base_url\": \"http://HOST:8000/v1\"}' for openai")
    add_reader_profile(parser)
    parser.add_argument("--decisions", type=int, default=50,
                        help="recorded prompts of each of the 5 kinds (default: %(default)s; SmolLM2-135M on 2 "
                             "cores: about 1.2 s a decision)")
    parser.add_argument("--out", required=True, help="the profile's .toml file (answers go beside it as .jsonl)")
    parser.add_argument("--name", help="the profile's name (default: the file's stem)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar; log lines on stderr")
    parser.set_defaults(func=cmd_calibrate)


__all__ = ["MAX_DECISIONS", "add_parser", "cmd_calibrate"]
