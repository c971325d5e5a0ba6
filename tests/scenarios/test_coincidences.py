"""Methods with identical episodes in a headline table, each explained (README, "Methods with
identical episodes") and separated by a scenario where their rules differ."""

from __future__ import annotations

import numpy as np
import pytest

from tepa_envs.agents.evaluation import evaluate

SEEDS = range(40)


def identical(env_id: str, a: str, b: str, **env_kwargs) -> bool:
    evaluation = evaluate(env_id, [a, b], SEEDS, env_kwargs=env_kwargs, metrics=False)
    return bool(np.array_equal(evaluation.runs[a].success, evaluation.runs[b].success))


@pytest.mark.parametrize("a, b, same_on, differ_on, differ_kwargs", [
    # one key, deterministic outcomes: BOCPD's alarm and TEPA's recent-success rule both fire at a held
    # value's second failure in a row; with outcome noise one failure in three is common and they part
    ("bocpd", "tepa", "TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-Noisy-v0", {}),
    # a window of the last 20 successes still holds the old value's after a 40-task reversal phase, since
    # the new value succeeds only when the reader strays; a long reversal or several keys fill it
    ("sliding-window", "append-only", "TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-v0",
     {"phase_lengths": [40, 40, 400, 40]}),
    # ADWIN needs more outcomes of one value than a preference session gives it before it can cut its
    # window, so it never alarms there and ranks like append-only; controlled drift's long runs let it
    ("adwin", "append-only", "TEPA/PreferenceStream-v0", "TEPA/RegimeDrift-v0", {}),
])
def test_identical_where_explained_and_separated_elsewhere(a, b, same_on, differ_on, differ_kwargs):
    assert identical(same_on, a, b)
    assert not identical(differ_on, a, b, **differ_kwargs)
