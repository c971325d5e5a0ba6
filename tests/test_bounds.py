"""``oracle-view`` bounds every shipped memory (issue 31, item 1).

On every registered RegimeDrift scenario, the PreferenceStream and FileOps, under the
reader profiles ``default``, ``ideal`` and ``never-explore`` (and ``smollm2-135m`` on the
controlled scenario), no shipped method's mean success exceeds ``oracle-view``'s beyond
the 95 % paired-bootstrap CI of the per-seed differences (method - oracle-view, paired
by seed: the same task stream). Representative methods everywhere (``BOUNDED``); every
registered method on the controlled scenario. Per-key ``oracle-reset`` is checked to do
at least as well as the global-boundary reading where keys change at different times.
"""

import numpy as np
import pytest

import tepa_envs
from tepa_envs.agents.evaluation import evaluate
from tepa_envs.agents.evaluation.engine.jobs import MethodSpec
from tepa_envs.agents.memories.registry import METHOD_NAMES
from tepa_envs.agents.readers.profile import load_profile

CEILING = "oracle-view"
BOUNDED = ["two-strike", "tepa", "lww", "temporal-recency", "reactive-forgetting", "oracle-reset"]
PROFILES = ("default", "ideal", "never-explore")
SCENARIOS = ("TEPA/RegimeDrift-v0", *tepa_envs.SCENARIOS, "TEPA/PreferenceStream-v0")


def lower_bound_of_excess(method: np.ndarray, ceiling: np.ndarray, n: int = 2000) -> float:
    """2.5 % quantile of the bootstrap mean of per-seed ``method - ceiling``."""
    diff = method - ceiling
    rng = np.random.default_rng(0)
    return float(np.quantile(diff[rng.integers(0, len(diff), (n, len(diff)))].mean(axis=1), 0.025))


def assert_bounded(env_id, methods, seeds, profile):
    evaluation = evaluate(env_id, [CEILING, *methods], seeds, reader_kwargs=load_profile(profile).reader_kwargs(),
                          metrics=False)
    ceiling = evaluation.runs[CEILING].success.mean(axis=1)
    for method in methods:
        success = evaluation.runs[method].success.mean(axis=1)
        assert lower_bound_of_excess(success, ceiling) <= 0.0, (env_id, profile, method, success.mean(),
                                                                ceiling.mean())


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("env_id", SCENARIOS)
def test_no_shipped_method_beats_oracle_view(env_id, profile):
    assert_bounded(env_id, BOUNDED, range(8), profile)


@pytest.mark.parametrize("profile", PROFILES)
def test_no_shipped_method_beats_oracle_view_on_file_ops(profile):
    assert_bounded("TEPA/FileOps-v0", BOUNDED, range(3), profile)


@pytest.mark.parametrize("profile", [*PROFILES, "smollm2-135m"])
def test_no_registered_method_beats_oracle_view_on_the_controlled_scenario(profile):
    methods = [m for m in METHOD_NAMES if m != CEILING]
    assert_bounded("TEPA/RegimeDrift-v0", methods, range(6), profile)


def test_per_key_oracle_reset_is_not_below_the_global_reading_where_keys_change_apart():
    for env_id in ("TEPA/RegimeDrift-Poisson-v0", "TEPA/RegimeDrift-Gradual-v0", "TEPA/RegimeDrift-Async-v0"):
        evaluation = evaluate(env_id, ["oracle-reset", MethodSpec("global", "oracle-reset", {"scope": "global"})],
                              range(10), metrics=False)
        assert evaluation.runs["oracle-reset"].success.mean() > evaluation.runs["global"].success.mean(), env_id
