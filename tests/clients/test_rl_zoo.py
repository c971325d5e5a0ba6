"""RL Baselines3 Zoo as a client (issue 32, item 6): ``python -m rl_zoo3.train`` trains PPO a few
hundred steps from a conf file (``--gym-packages tepa_envs``), with ``MemoryObservation`` or
``FlatObservation`` as the Zoo's ``env_wrapper`` or with the plain environment, and
``python -m rl_zoo3.enjoy`` replays the saved agent with ``render_mode="human"`` (the ansi
frame printed). FactConsolidation trains with ``action_mode="choice"`` (``env_kwargs`` in the conf
file) and the Zoo's default ``MultiInputPolicy`` on its ``Dict`` observation.

Skipped, with the reason, without ``rl_zoo3`` (the ``clients`` extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rl_zoo3.train", reason="RL Baselines3 Zoo is not installed: pip install 'tepa-envs[clients]'")

CASES = {
    "regime-drift-tepa": ("TEPA/RegimeDrift-v0", "MultiInputPolicy",
                          "  env_wrapper:\n    - tepa_envs.wrappers.MemoryObservation:\n        memory: tepa\n"),
    "file-ops-plain": ("TEPA/FileOps-v0", "MlpPolicy", ""),
    "preference-flat-lww": ("TEPA/PreferenceStream-v0", "MlpPolicy",
                            "  env_wrapper:\n    - tepa_envs.wrappers.MemoryObservation:\n        memory: lww\n"
                            "    - tepa_envs.wrappers.FlatObservation\n"),
    "fact-consolidation-choice": ("TEPA/FactConsolidation-v0", "MultiInputPolicy",
                                  ("  env_kwargs:\n    length: 6k\n    chunk_facts: 455\n    action_mode: choice\n"
                                   "    extraction: templates\n    generator: classic\n")),
}
ENJOY = {"fact-consolidation-choice": (["length:'6k'", "chunk_facts:455", "action_mode:'choice'",
                                        "extraction:'templates'", "generator:'classic'"], 110, "memorize chunk 1/1")}
"""Per case: ``--env-kwargs``, steps (an episode ends within them) and a line of the human frames."""
DEFAULT_ENJOY = (["phase_lengths:(5,5,5,5)"], 30, "t=1 ")


def zoo(module: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-m", f"rl_zoo3.{module}", *args], cwd=cwd, capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


@pytest.mark.parametrize("case", sorted(CASES))
def test_train_and_enjoy(case, tmp_path):
    env_id, policy, wrapper = CASES[case]
    (tmp_path / "conf.yml").write_text(
        f"{env_id}:\n  n_timesteps: 256\n  policy: {policy}\n  n_steps: 64\n  batch_size: 32\n  n_epochs: 1\n"
        f"  n_envs: 2\n{wrapper}")
    common = ["--algo", "ppo", "--env", env_id, "--gym-packages", "tepa_envs", "-f", "logs", "--device", "cpu"]
    zoo("train", [*common, "--conf-file", "conf.yml", "--seed", "0", "--eval-freq", "-1"], tmp_path)
    saved = list((tmp_path / "logs" / "ppo").glob("*_1/*.zip"))
    assert saved, "train saved no model"
    env_kwargs, steps, frame = ENJOY.get(case, DEFAULT_ENJOY)
    shown = zoo("enjoy", [*common, "-n", str(steps), "--env-kwargs", *env_kwargs], tmp_path)
    assert frame in shown.stdout, "enjoy's human rendering printed no frame"
    assert "Episodes" in shown.stdout
