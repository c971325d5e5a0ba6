"""The examples run end to end (short settings; the full runs are benchmarks)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ppo_example_smoke_run(capsys):
    example = _load("ppo_regime_drift")
    results = example.main(["--timesteps", "256", "--eval-episodes", "1"])
    assert list(results) == ["no memory", "TEPA", "append-only"]
    for per_phase in results.values():
        assert per_phase.shape == (4,) and np.all((0.0 <= per_phase) & (per_phase <= 1.0))
    out = capsys.readouterr().out
    assert "full_reversal" in out and "append-only" in out


def test_shared_memory_team_example(capsys):
    example = _load("shared_memory_team")
    results = example.main(["--seeds", "3"])
    assert len(results) == 6
    shared_tepa, _ = results[("shared TEPA", False)]
    shared_append_only, _ = results[("shared append-only", False)]
    assert shared_tepa > shared_append_only + 0.3
    assert "private TEPA" in capsys.readouterr().out
