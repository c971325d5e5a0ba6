"""TEPA's grouped configuration: TEPAParams and TEPAChoices, validated on construction, the
grouped form equal to the keyword form, and the two never mixed."""

from __future__ import annotations

import dataclasses

import pytest

from tepa_envs.agents.memories import TEPA, TEPAChoices, TEPAFull, TEPANoRev, TEPAPaper, TEPAParams, TEPARegime
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.memories.tepa_choices import PRESETS
from tepa_envs.core import Evidence


def feed(memory, n=60):
    for t in range(n):
        memory.observe(Evidence(f"k{t % 3}", "ab"[(t // 7) % 2], t, (True, True, False, None)[t % 4]))
    return memory.audit_log, memory.precedents(), [memory.retrieve(f"k{i}") for i in range(3)]


def test_defaults_are_the_papers_numbers():
    assert TEPAParams().as_dict() == {"alpha": 1.0, "beta": 1.0, "theta_rev": 0.3, "n_min": 5, "theta_rec": 0.34,
                                      "n_rec": 3, "theta_pro": 0.6, "theta_prop": 3, "top_k": 3}
    assert TEPA().params == TEPAParams() and TEPA().choices == TEPAChoices.from_preset("v0")


@pytest.mark.parametrize("field, bad, error", [
    ("alpha", 0, ValueError), ("beta", -1.0, ValueError), ("alpha", "1", TypeError), ("beta", True, TypeError),
    ("theta_rev", 1.5, ValueError), ("theta_rec", float("nan"), ValueError), ("theta_pro", "0.6", TypeError),
    ("n_min", 0, ValueError), ("n_rec", 2.0, TypeError), ("theta_prop", -3, ValueError), ("top_k", "3", TypeError),
])
def test_a_bad_field_is_refused_naming_it(field, bad, error):
    with pytest.raises(error, match=field):
        TEPAParams(**{field: bad})
    with pytest.raises(error, match=field):
        TEPA(**{field: bad})


def test_numbers_are_normalised_and_the_dataclass_is_frozen():
    import numpy as np

    params = TEPAParams(alpha=2, theta_rev=np.float64(0.25), n_min=np.int64(4))
    assert type(params.alpha) is float and type(params.theta_rev) is float and type(params.n_min) is int
    assert params == TEPAParams(alpha=2.0, theta_rev=0.25, n_min=4) and hash(params)
    with pytest.raises(dataclasses.FrozenInstanceError):
        params.theta_rev = 0.5  # type: ignore[misc]


@pytest.mark.parametrize("cls", [TEPA, TEPANoRev, TEPAFull, TEPARegime])
def test_the_grouped_form_equals_the_keyword_form(cls):
    keywords = cls(theta_rev=0.4, n_rec=4, top_k=2, preset="paper", tie_break="last_created")
    grouped = cls(params=TEPAParams(theta_rev=0.4, n_rec=4, top_k=2),
                  choices=TEPAChoices.from_preset("paper", tie_break="last_created"))
    assert (keywords.params, keywords.choices, keywords.preset) == (grouped.params, grouped.choices, "paper")
    assert feed(keywords) == feed(grouped)


def test_the_paper_presets_fresh_threshold_follows_theta_prop():
    assert TEPA(preset="paper", theta_prop=5).choices == TEPAChoices.from_preset("paper", theta_prop=5)
    assert TEPAChoices.from_preset("paper", theta_prop=5).theta_prop_fresh == 5
    assert TEPA(params=TEPAParams(theta_prop=5), choices=TEPAChoices.from_preset("paper", theta_prop=5)).preset == "paper"
    custom = TEPA(choices=TEPAChoices.from_preset("v0", tie_break="first_created"))
    assert custom.preset is None and custom.choices.tie_break == "first_created"


@pytest.mark.parametrize("kwargs, named", [
    ({"params": TEPAParams(), "theta_rev": 0.4}, "theta_rev"),
    ({"params": TEPAParams(), "alpha": 1.0}, "alpha"),
    ({"choices": TEPAChoices.from_preset(), "preset": "v0"}, "preset"),
    ({"choices": TEPAChoices.from_preset(), "tie_break": "first_created"}, "tie_break"),
    ({"params": {"theta_rev": 0.4}}, "params"),
    ({"choices": dict(PRESETS["v0"])}, "choices"),
])
def test_the_two_forms_are_never_mixed(kwargs, named):
    with pytest.raises(TypeError, match=named):
        TEPA(**kwargs)
    with pytest.raises(TypeError, match=named):
        make_memory("tepa-regime", **kwargs)


def test_tepa_paper_refuses_choices():
    with pytest.raises(TypeError, match="choices"):
        TEPAPaper(choices=TEPAChoices.from_preset("paper"))
    assert TEPAPaper(params=TEPAParams(theta_rev=0.4)).theta_rev == 0.4


def test_setting_a_parameter_validates_it_and_changes_nothing_when_refused():
    memory = TEPA()
    feed(memory)
    before = memory.params, memory.choices, feed(memory, 0)
    for name, bad, error in [("theta_rev", 2.0, ValueError), ("n_rec", "3", TypeError), ("top_k", 0, ValueError),
                             ("theta_prop_fresh", 0, ValueError), ("revocation", 1, TypeError),
                             ("params", {"theta_rev": 0.4}, TypeError), ("choices", "paper", TypeError)]:
        with pytest.raises(error, match=name):
            setattr(memory, name, bad)
    assert (memory.params, memory.choices, feed(memory, 0)) == before
    memory.n_rec, memory.theta_prop_fresh = 4, 2
    assert memory.params == TEPAParams(n_rec=4) and memory.choices.theta_prop_fresh == 2 == memory.theta_prop_fresh
