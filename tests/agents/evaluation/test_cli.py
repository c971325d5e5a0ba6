"""tepa-bench end to end: outputs, worker invariance, user methods, and usage errors."""

import json
import subprocess
import sys
import textwrap

import pytest

from tepa_envs.agents.evaluation.analysis.results import SCHEMA_VERSION, Summary
from tepa_envs.agents.evaluation.cli import main

SMALL = '{"phase_lengths": [6, 6, 6, 6]}'


def run_cli(tmp_path, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", *args], capture_output=True,
                          text=True, cwd=cwd or tmp_path)


def test_run_writes_documented_outputs(tmp_path):
    out = tmp_path / "out"
    assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa,no-memory,append-only", "--seeds", "3",
                 "--workers", "1", "--out", str(out), "--quiet", "--env-kwargs", SMALL]) == 0
    results = json.loads((out / "results.json").read_text())
    for field in ("schema_version", "env_id", "env_kwargs", "seeds", "methods", "phases", "summary", "comparisons",
                  "trials_per_episode", "per_task_success", "phase_of_task", "elapsed_s"):
        assert field in results
    assert results["schema_version"] == SCHEMA_VERSION
    assert results["seeds"] == [0, 1, 2]
    assert results["phases"] == ["stable", "light_drift", "full_reversal", "partial_return", "overall"]
    cell = results["summary"]["tepa"]["full_reversal"]
    assert cell["ci_low"] <= cell["mean"] <= cell["ci_high"] and "mpi" in cell
    comparison = results["comparisons"][0]
    assert {"method", "baseline", "phase", "diff", "ci_low", "ci_high", "p_value", "p_holm"} <= set(comparison)
    typed = Summary.from_json(results)
    assert typed.estimate("tepa", "full_reversal").mean == cell["mean"] and typed.to_json() == results
    assert (out / "results.csv").read_text().startswith("env_id,method,phase,success")
    assert (out / "success.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_two_workers_give_the_same_numbers_as_one(tmp_path):
    results = []
    for workers in ("1", "2"):
        out = tmp_path / workers
        assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa,lww", "--seeds", "4",
                     "--workers", workers, "--out", str(out), "--quiet", "--env-kwargs", SMALL]) == 0
        data = json.loads((out / "results.json").read_text())
        data.pop("elapsed_s")
        results.append(data)
    assert results[0] == results[1]


def test_user_memory_by_import_path_runs_end_to_end(tmp_path):
    (tmp_path / "my_memory.py").write_text(textwrap.dedent("""
        from tepa_envs.core import LifecycleState, Record

        class NewestSuccess:
            name = "newest-success"

            def __init__(self):
                self.values = {}

            def observe(self, evidence):
                if evidence.outcome:
                    self.values[evidence.key] = (evidence.value, evidence.t)

            def retrieve(self, key, context=""):
                if key not in self.values:
                    return []
                value, t = self.values[key]
                return [Record(key, value, 1, 0, LifecycleState.ACTIVE, t, t)]

            def reset(self):
                self.values.clear()
    """))
    proc = run_cli(tmp_path, "run", "TEPA/RegimeDrift-v0", "--methods", "my_memory:NewestSuccess,no-memory",
                   "--seeds", "3", "--workers", "2", "--out", "out", "--quiet", "--env-kwargs", SMALL)
    assert proc.returncode == 0, proc.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["methods"] == ["my_memory:NewestSuccess", "no-memory"]
    assert "my_memory:NewestSuccess" in proc.stdout


@pytest.mark.parametrize("args, needle", [
    (["run", "TEPA/Nope-v0", "--methods", "tepa"], "TEPA/RegimeDrift-v0"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "tepa,bogus"], "valid names"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--env-kwargs", '{"n_tools": 1}'], "n_tools"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--env-kwargs", '{"colour": 1}'], "valid: phase_lengths"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--env-kwargs", "[1]"], "JSON object"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--seeds", "0"], "--seeds"),
    (["reproduce", "everything"], "controlled"),
])
def test_usage_errors_are_one_line_with_exit_status_2(capsys, args, needle):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tepa-bench: error:") and needle in err and "\n" not in err


def test_reader_kwargs_apply_to_every_method_and_are_recorded(tmp_path):
    outputs = {}
    for follow in ("1.0", "0.0"):
        out = tmp_path / follow
        assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "append-only,no-memory", "--seeds", "3",
                     "--workers", "1", "--out", str(out), "--quiet", "--env-kwargs", SMALL,
                     "--reader-kwargs", f'{{"follow_prob": {follow}}}']) == 0
        outputs[follow] = json.loads((out / "results.json").read_text())
    assert outputs["1.0"]["reader_kwargs"] == {"follow_prob": 1.0}
    never_follows, always_follows = Summary.from_json(outputs["0.0"]), Summary.from_json(outputs["1.0"])
    # a reader that never follows its prompt makes every memory equal to no memory
    assert never_follows.estimate("append-only", "overall") == never_follows.estimate("no-memory", "overall")
    assert always_follows.estimate("append-only", "overall") != never_follows.estimate("append-only", "overall")


def test_bad_reader_kwargs_are_a_usage_error(capsys):
    assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--reader-kwargs", '{"follow": 1}']) == 2
    assert "follow_prob" in capsys.readouterr().err


def test_methods_all_expands_to_every_shipped_method_plus_user_methods(tmp_path):
    from tepa_envs.agents import METHOD_NAMES

    out = tmp_path / "all"
    assert main(["run", "TEPA/RegimeDrift-v0", "--methods", "all,tepa_envs.agents.memories.tepa:TEPANoRev",
                 "--seeds", "1", "--workers", "1", "--out", str(out), "--quiet", "--env-kwargs", SMALL]) == 0
    methods = json.loads((out / "results.json").read_text())["methods"]
    assert methods == [*METHOD_NAMES, "tepa_envs.agents.memories.tepa:TEPANoRev"]


@pytest.mark.parametrize("argv", [
    ["run", "TEPA/RegimeDrift-v0", "--methods", "all", "--seeds", "2", "--workers", "1"],
    ["suite", "--seeds", "2", "--workers", "1", "--scenarios", "TEPA/RegimeDrift-v0,TEPA/RegimeDrift-Poisson-v0"],
])
def test_terminal_output_fits_100_columns(argv, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "out"), "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 20
    assert max(len(line) for line in lines if str(tmp_path) not in line) <= 100  # a path is as long as it is
