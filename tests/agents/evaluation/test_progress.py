"""Progress of long commands: a bar on a terminal, lines otherwise, nothing when quiet;
and the main job (``tepa-bench reproduce``) reports each stage and where its files went."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from tepa_envs.agents.evaluation.cli import build_parser
from tepa_envs.agents.evaluation.cli.commands import _protocol as protocol_of_args
from tepa_envs.agents.evaluation.engine.progress import Progress, progress_factory, progress_mode
from tepa_envs.agents.evaluation.studies.protocol import FULL, QUICK, STANDARD, protocol_name


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_mode_follows_the_stream_and_quiet():
    assert progress_mode(quiet=False, stream=Terminal()) == "bar"
    assert progress_mode(quiet=False, stream=io.StringIO()) == "lines"
    assert progress_mode(quiet=True, stream=Terminal()) == "off"


def test_lines_mode_writes_periodic_lines_and_one_at_the_end():
    stream = io.StringIO()
    with Progress("stage", "lines", stream=stream, interval=0.0) as progress:
        for done in range(1, 5):
            progress(done, 4)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("stage: 1/4 ep (25 %)")
    assert lines[-1].startswith("stage: 4/4 ep (100 %)") and len(lines) == 5


def test_lines_mode_waits_for_the_interval():
    stream = io.StringIO()
    with Progress("stage", "lines", stream=stream, interval=3600.0) as progress:
        for done in range(1, 101):
            progress(done, 100)
    assert stream.getvalue().splitlines() == [stream.getvalue().splitlines()[0]]
    assert stream.getvalue().startswith("stage: 100/100 ep (100 %)")


def test_a_second_round_of_jobs_adds_to_the_stage():
    """The precision rule's extra seeds come as a second executor call: counts add up."""
    stream = io.StringIO()
    with Progress("stage", "lines", stream=stream, interval=3600.0) as progress:
        for done in range(1, 4):
            progress(done, 3)
        for done in range(1, 3):
            progress(done, 2)
        assert (progress.done, progress.total) == (5, 5)
    assert stream.getvalue().startswith("stage: 5/5 ep")


def test_bar_mode_draws_a_tqdm_bar_and_off_mode_writes_nothing():
    terminal = Terminal()
    with progress_factory(quiet=False, stream=terminal)("stage") as progress:
        progress(1, 2)
        progress(2, 2)
    assert "stage" in terminal.getvalue() and "2/2" in terminal.getvalue()
    silent = io.StringIO()
    with progress_factory(quiet=True, stream=silent)("stage") as progress:
        progress(1, 1)
    assert silent.getvalue() == ""


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        Progress("stage", "spinner")


@pytest.mark.parametrize("flags, expected", [([], STANDARD), (["--full"], FULL), (["--quick"], QUICK)])
def test_reproduce_runs_the_standard_size_unless_asked(flags, expected):
    args = build_parser().parse_args(["reproduce", "controlled", *flags])
    assert protocol_of_args(args) == expected


def test_standard_size_is_the_full_protocol_made_smaller():
    """Every study of the full protocol runs, on fewer seeds and to a wider half-width."""
    assert STANDARD.seeds < FULL.seeds and STANDARD.robustness_seeds < FULL.robustness_seeds
    assert STANDARD.study_seeds < FULL.study_seeds and STANDARD.max_half_width > FULL.max_half_width
    assert (STANDARD.follow_probs, STANDARD.stated_probs) == (FULL.follow_probs, FULL.stated_probs)
    assert protocol_name(STANDARD) == "standard" and protocol_name(FULL) == "full"


def test_quick_and_full_together_are_a_usage_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "reproduce", "controlled",
                             "--quick", "--full", "--out", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 2 and "--quick and --full" in result.stderr


def test_reproduce_without_a_terminal_reports_stages_progress_and_files(tmp_path):
    out = tmp_path / "results"
    result = subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "reproduce", "controlled",
                             "--quick", "--workers", "1", "--out", str(out)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    stderr = result.stderr.splitlines()
    assert "(quick protocol)" in stderr[0]
    for stage in ("every method", "oracle bound", "robustness grid", "TEPA ablation", "key noise"):
        assert any(line.startswith(f"controlled: {stage}") and "(100 %)" in line for line in stderr), stage
    assert any(f"wrote {out / 'controlled'}/" in line and "results.json" in line for line in stderr)
    assert f"wrote {out}/" in result.stdout
    assert json.loads((out / "controlled" / "protocol.json").read_text())["protocol"] == "quick"
