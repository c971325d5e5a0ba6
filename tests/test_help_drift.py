"""What the help and the documentation name is what the code has: every command of the
parser in the top-level usage and in the "Where files go" table, every registered
environment id on an environment page, every output file a command's help names
written by that command's documented row."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import gymnasium as gym

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents.evaluation.cli.app import USAGE, build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _commands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_command_is_in_the_top_level_usage():
    usage = set(re.findall(r"^\s+tepa-bench (\w+)", USAGE, flags=re.MULTILINE))
    assert set(_commands()) == usage


def test_every_command_has_a_row_in_where_files_go():
    table = (DOCS / "getting-started.md").read_text()
    table = table[table.index("## Where files go"):]
    documented = set(re.findall(r"^\| `tepa-bench (\w+)", table, flags=re.MULTILINE))
    # `report` and `clean` are named in the rows of the commands they serve (sweep, FileOps)
    assert set(_commands()) - documented <= {"report", "clean"}
    assert "tepa-bench report" in table and "tepa-bench clean" in table


def test_every_registered_environment_is_on_an_environment_page():
    pages = "\n".join(p.read_text() for p in (DOCS / "environments").glob("*.md"))
    ids = [env_id for env_id in gym.envs.registry if env_id.startswith("TEPA/")]
    missing = [env_id for env_id in ids if env_id not in pages and env_id.removeprefix("TEPA/") not in pages
               and not _named_by_suffix(env_id, pages)]
    assert not missing, f"registered but on no page of docs/environments/: {missing}"


def _named_by_suffix(env_id: str, pages: str) -> bool:
    """Scenario ids are listed as `-Noisy-v0`, `-ManyKeys-v0`, ... after `TEPA/RegimeDrift-v0`; their
    twins as `TEPA/RegimeDrift-<Scenario>-MDP-v0` beside the scenario names."""
    match = re.fullmatch(r"TEPA/RegimeDrift-(\w+?)(-MDP)?-v0", env_id)
    if match is None:
        return False
    scenario, twin = match.groups()
    if twin:
        return "`TEPA/RegimeDrift-<Scenario>-MDP-v0`" in pages and scenario in pages
    return f"`-{scenario}-v0`" in pages


def test_the_output_files_a_help_names_are_the_ones_its_row_documents():
    commands = _commands()
    table = (DOCS / "getting-started.md").read_text()
    for command in ("suite", "rl"):
        out = next(a for a in commands[command]._actions if "--out" in a.option_strings)
        named = set(re.findall(r"[\w.]+\.(?:json|csv|md|png|db)", out.help or ""))
        row = next(line for line in table.splitlines() if line.startswith(f"| `tepa-bench {command}"))
        assert named and all(name in row for name in named), (command, named, row)
