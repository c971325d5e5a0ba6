"""TEPA/FileOps-v0: real exports in a sandbox, a drifting CSV consumer, a stable JSON control."""

from __future__ import annotations

import csv
import gc
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401
from tepa_envs.agents import MemoryAgent, run_episode
from tepa_envs.file_ops.formats import WRITER_CONFIGS, configs_of, consume, make_table, record_values, write_table
from tepa_envs.file_ops.env import FileOpsEnv
from tepa_envs.file_ops.sandbox import SandboxError

SHORT = (6, 6, 6, 6)


def make(tmp_path: Path, **kwargs) -> FileOpsEnv:
    return FileOpsEnv(sandbox_dir=str(tmp_path), **kwargs)


def digest_of_episode(seed: int, sandbox_dir: str | None = None) -> str:
    env = FileOpsEnv(phase_lengths=SHORT, sandbox_dir=sandbox_dir)
    obs, info = env.reset(seed=seed)
    parts = [repr(obs.tolist()), repr(sorted(info.items()))]
    for t in range(sum(SHORT)):
        obs, reward, terminated, truncated, info = env.step((t * 5 + seed) % 6)
        parts.append(repr((obs.tolist(), reward, terminated, truncated, sorted(info.items()))))
    env.close()
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def test_check_env_passes_for_the_registered_env(tmp_path: Path):
    env = gym.make("TEPA/FileOps-v0", sandbox_dir=str(tmp_path))
    check_env(env.unwrapped)
    env.close()
    assert os.listdir(tmp_path) == []


def test_a_step_really_writes_the_file_and_the_consumer_reads_it_back(tmp_path: Path):
    env = make(tmp_path)
    _, info = env.reset(seed=3)
    while not info["key"].endswith("/csv"):
        _, _, _, _, info = env.step(env.to_action(info["oracle"]["correct"]))
    domain = info["key"].split("/")[1]
    correct = info["oracle"]["correct"]
    fields = info["context"].split("(fields: ")[1].split(")")[0].split(", ")
    n_records = int(info["context"].split("export ")[1].split()[0])
    _, reward, _, _, info = env.step(env.to_action(correct))
    assert reward == 1.0 and info["success"] and info["message"] == f"accepted {n_records} records"
    path = Path(env.sandbox.root) / "outbox" / f"{domain}.csv"
    text = path.read_text(encoding="utf-8")
    delimiter = {"csv:comma": ",", "csv:semicolon": ";", "csv:tab": "\t"}[correct]
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    assert rows[0] == fields and len(rows) == n_records + 1
    assert all(len(row) == len(fields) and int(row[0]) > 0 for row in rows[1:])
    assert env.sandbox.list("outbox") == [f"{domain}.csv"]
    env.close()


def test_consumer_rejections_carry_the_parsers_own_message(tmp_path: Path):
    numbers = np.arange(6 * 5, dtype=np.int64).reshape(1, 6, 5) * 7919
    table = make_table("finance", record_values(np.array([0]), numbers)[0], 4)
    accepted, message = consume("json:array", table, write_table("json:lines", table))
    assert not accepted and message.startswith("JSONDecodeError: Extra data: line 2 column 1")
    accepted, message = consume("json:lines", table, write_table("json:array", table))
    assert not accepted and message == "Rejected: line 1: expected one JSON object per line, got array"
    accepted, message = consume("json:array", table, write_table("json:envelope", table))
    assert not accepted and message == "Rejected: expected a JSON array of records, got object"
    accepted, message = consume("json:envelope", table, write_table("json:array", table) + "]")
    assert not accepted and message.startswith("JSONDecodeError: Extra data: line 2 column 1")
    accepted, message = consume("csv:semicolon", table, write_table("csv:comma", table))
    assert not accepted and "header mismatch" in message and "'id,account,amount,currency,booked'" in message
    for config in WRITER_CONFIGS:
        for expected in WRITER_CONFIGS:
            assert consume(expected, table, write_table(config, table))[0] == (config == expected)

    env = make(tmp_path, phase_lengths=SHORT)
    _, info = env.reset(seed=0)
    key, correct = info["key"], info["oracle"]["correct"]
    wrong = next(c for c in env.choices(key) if c != correct)
    _, reward, _, _, info = env.step(env.to_action(wrong))
    assert reward == 0.0 and not info["success"]
    assert info["message"].split(":")[0] in ("Rejected", "JSONDecodeError")
    assert env.last_evidence == (tepa_envs.Evidence(key, wrong, 0, False, "consumer"),)
    assert info["evidence"] == {"count": 1, "key": key, "value": wrong, "t": 0, "outcome": 0, "source": "consumer"}
    assert f"with {wrong}) was rejected by the consumer: {info['message']}" in info["context"]
    env.close()


def test_csv_drifts_at_reversal_and_json_stays_stable(tmp_path: Path):
    env = make(tmp_path, n_domains=3)
    for seed in range(20):
        env.reset(seed=seed)
        for key, per_phase in env.regime_table().items():
            if key.endswith("/json"):
                assert len(set(per_phase)) == 1
            else:
                stable, light, reversal, back = per_phase
                assert reversal not in (stable, light) and set(per_phase) <= set(configs_of("csv"))
                assert back in (reversal, stable)
    env.close()


def test_oracle_actions_always_succeed_and_others_always_fail(tmp_path: Path):
    env = make(tmp_path, n_domains=2, phase_lengths=(10, 10, 10, 10))
    _, info = env.reset(seed=11)
    terminated, t = False, 0
    while not terminated:
        key, correct = info["key"], info["oracle"]["correct"]
        assert env.choices(key) == configs_of(key.rsplit("/", 1)[1])
        for value in WRITER_CONFIGS:
            assert env.trial("support", key, value) == (value == correct)
        action = env.to_action(correct) if t % 2 == 0 else env.to_action(
            next(c for c in WRITER_CONFIGS if c != correct))
        _, reward, terminated, _, info = env.step(action)
        assert reward == float(t % 2 == 0)
        t += 1
    assert env.trials_spent["support"] == 40 * len(WRITER_CONFIGS)
    env.close()


def test_same_seed_same_stream_in_another_process(tmp_path: Path):
    here = digest_of_episode(5, str(tmp_path))
    assert here == digest_of_episode(5, str(tmp_path))
    assert here != digest_of_episode(6, str(tmp_path))
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from test_file_ops import digest_of_episode; "
              "print(digest_of_episode(5, sys.argv[2]))")
    env = dict(os.environ, PYTHONHASHSEED="123")
    out = subprocess.run([sys.executable, "-c", script, str(Path(__file__).parent), str(tmp_path)],
                         capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == here


def test_trials_do_not_change_the_episode(tmp_path: Path):
    def run(with_trials: bool) -> list:
        env = make(tmp_path, phase_lengths=SHORT)
        _, info = env.reset(seed=9)
        seen, terminated, t = [], False, 0
        while not terminated:
            if with_trials:
                for kind in ("support", "counterfactual", "contamination"):
                    env.trial(kind, info["key"], WRITER_CONFIGS[t % 6])
                env.trial("support", "export/nowhere/csv", "csv:comma")
            _, reward, terminated, _, info = env.step(t % 6)
            seen.append((reward, sorted(info.items())))
            t += 1
        env.close()
        return seen
    assert run(True) == run(False)


def test_memory_methods_run_and_tepa_recovers_from_the_reversal(tmp_path: Path):
    env = make(tmp_path)
    reversal = {}
    for method in ("append-only", "tepa"):
        scores = [run_episode(env, MemoryAgent(method), seed) for seed in range(6)]
        reversal[method] = np.mean([r.success[r.phase == 2].mean() for r in scores])
    assert reversal["tepa"] > reversal["append-only"] + 0.3
    env.close()


def test_an_exception_mid_step_removes_the_sandbox(tmp_path: Path):
    env = make(tmp_path, max_file_bytes=64)
    env.reset(seed=1)
    assert len(os.listdir(tmp_path)) == 1
    with pytest.raises(SandboxError, match="per-file quota"):
        env.step(0)
    assert env.sandbox.closed and os.listdir(tmp_path) == []
    with pytest.raises(ResetNeeded, match="reset"):
        env.step(0)
    env.reset(seed=1)
    with pytest.raises(ValueError, match="action"):
        env.step(17)
    assert not env.sandbox.closed  # a refused action is not a failed step
    env.close()


def test_thousand_reset_close_cycles_leave_no_directory(tmp_path: Path):
    env = make(tmp_path, phase_lengths=(1, 1, 1, 1))
    for seed in range(1000):
        env.reset(seed=seed)
        if seed % 100 == 0:
            env.step(0)
        env.close()
    assert os.listdir(tmp_path) == []
    env.reset(seed=0)
    del env
    gc.collect()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kwargs, match", [
    ({"max_records": 10**30}, r"max_records must be in \[3, 1000\]"),
    ({"max_records": 1001}, r"max_records must be in \[3, 1000\]"),
    ({"phase_lengths": (10**12, 1, 1, 1)}, r"phase_lengths\[0\] must be in \[1, 1000000\]"),
    ({"phase_lengths": (10**5,) * 4}, r"sum\(phase_lengths\) \* max_records must be <= 1,000,000"),
    ({"phase_lengths": (250, 250, 250, 251), "max_records": 1000}, r"sum\(phase_lengths\) \* max_records"),
    ({"max_files": 1}, "max_files must be >= 6 with n_domains=1"),
    ({"max_files": 5}, "max_files must be >= 6 with n_domains=1"),
    ({"max_files": 25, "n_domains": 6}, "max_files must be >= 26 with n_domains=6"),
])
def test_sizes_and_quotas_are_checked_in_the_constructor(tmp_path: Path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make(tmp_path, **kwargs)
    assert os.listdir(tmp_path) == []


def test_the_smallest_max_files_holds_the_whole_layout(tmp_path: Path):
    """``max_files = 2 + 4 * n_domains`` is enough for every export and every trial."""
    env = make(tmp_path, n_domains=2, max_files=10, phase_lengths=SHORT, csv_fraction=0.5)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        for key in env.keys:
            for config in WRITER_CONFIGS:
                env.trial("support", key, config)
        done = env.step(int(rng.integers(len(WRITER_CONFIGS))))[2]
    assert env.sandbox.files_used == 10
    env.close()


def test_sandbox_dir_is_checked_in_the_constructor(tmp_path: Path):
    with pytest.raises(ValueError, match="sandbox_dir must be an existing directory"):
        make(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="sandbox_dir must be an existing directory"):
        FileOpsEnv(sandbox_dir=str(tmp_path / "file"))
    with pytest.raises(TypeError, match="sandbox_dir must be a str or a path"):
        FileOpsEnv(sandbox_dir=3)
    if os.path.isdir("/proc"):  # a directory nothing can be created in, even as root
        with pytest.raises(ValueError, match="sandbox_dir '/proc' cannot hold a sandbox"):
            FileOpsEnv(sandbox_dir="/proc")
    env = FileOpsEnv(sandbox_dir=tmp_path, phase_lengths=SHORT)  # a Path works too; the probe leaves nothing
    assert os.listdir(tmp_path) == ["file"]
    env.reset(seed=0)
    assert Path(env.sandbox.root).parent == tmp_path
    env.close()


def test_phase_lengths_must_be_a_tuple_or_list(tmp_path: Path):
    with pytest.raises(TypeError, match="phase_lengths must be a tuple or list"):
        make(tmp_path, phase_lengths={0: 6, 1: 6, 2: 6, 3: 6})


def test_arguments_are_validated(tmp_path: Path):
    with pytest.raises(ValueError, match="n_domains"):
        make(tmp_path, n_domains=7)
    with pytest.raises(ValueError, match="csv_fraction"):
        make(tmp_path, csv_fraction=1.5)
    with pytest.raises(ValueError, match="max_records"):
        make(tmp_path, min_records=5, max_records=4)
    with pytest.raises(ValueError, match="phase_lengths"):
        make(tmp_path, phase_lengths=(1, 2))
    with pytest.raises(ValueError, match="value must be one of .*, got 'csv:pipe'"):
        make(tmp_path).to_action("csv:pipe")
    env = make(tmp_path, render_mode="ansi")
    env.reset(seed=0)
    env.step(0)
    assert "csv:comma ->" in env.render()
    with pytest.raises(ValueError, match="key must be one of"):
        env.accepted_config("export/finance/xml")
    env.close()
    json.dumps(env.metadata)
