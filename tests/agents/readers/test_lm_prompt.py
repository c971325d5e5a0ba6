"""The shared prompt of the language-model readers: golden files pin the rendered text.

Regenerate the golden files after an intended change of the template (and bump
``TEMPLATE_VERSION``): ``TEPA_UPDATE_GOLDEN=1 python -m pytest tests/agents/readers/test_lm_prompt.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents import MemoryAgent, make_memory
from tepa_envs.agents.readers.prompt import (
    EMPTY_MEMORY, TEMPLATE_VERSION, options_for, render_prompt, shows_validity,
)
from tepa_envs.core import LifecycleState, Record

GOLDEN = Path(__file__).resolve().parents[2] / "data" / "prompts"
ACTIVE = LifecycleState.ACTIVE
TOOLS = ("tool_0", "tool_1", "tool_2")
REGIME_TASK = ("Request #100: summarize the finance records provided as csv. "
               "Available tools: tool_0, tool_1, tool_2. Pick one tool.")
CASES = {
    "regime_tepa": (REGIME_TASK, TOOLS, [Record("summarize/finance/csv", "tool_2", 5, 0, ACTIVE, 80, 99, 6 / 7)],
                    True),
    "regime_append_only": (REGIME_TASK, TOOLS, [Record("summarize/finance/csv", "tool_0", 21, 1, ACTIVE, 0, 60),
                                                Record("summarize/finance/csv", "tool_2", 5, 1, ACTIVE, 80, 99)],
                           False),
    "regime_no_memory": (REGIME_TASK, TOOLS, [], False),
    "preference_stated": ('Session 120. Profile: travel. The user asks you to organize some notes. Choose the '
                          'output format for this answer. The user says: "My output format is markdown these days."',
                          ("markdown", "plain-text", "table", "json", "bullet-list"),
                          [Record("output_format@travel", "table", 21, 1, ACTIVE, 3, 110)], False),
    "free_text_multiline_value": ("Who is Pesu Doki Tuzoti married to?", (),
                                  [Record("Pesu Doki Tuzoti|spouse", "Nigi\n  Lorire", 1, 0, ACTIVE, 368, 368, 2 / 3),
                                   Record("Pesu Doki Tuzoti|spouse", "Mobe Ramadu", 1, 1, ACTIVE, 12, 12, 0.5)],
                                  True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rendered_prompts_match_the_golden_files(name):
    context, choices, records, validity = CASES[name]
    text = render_prompt(context, choices, records, validity=validity).text()
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("TEPA_UPDATE_GOLDEN"):
        path.write_text(text + "\n", encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text + "\n", f"{name}: the template changed; bump TEMPLATE_VERSION"


def test_the_template_has_a_version_and_the_golden_files_name_it():
    assert TEMPLATE_VERSION == "tepa-reader-prompt/1"
    assert (GOLDEN / "VERSION").read_text(encoding="utf-8").strip() == TEMPLATE_VERSION


def test_only_what_the_memory_returned_is_rendered_and_methods_differ_only_in_the_memory_block():
    context, choices, _, _ = CASES["regime_tepa"]
    shown = render_prompt(context, choices, [Record("k", "tool_1", 3, 2, ACTIVE, 0, 0, 0.57)])
    empty = render_prompt(context, choices, [])
    assert "tool_1 (support 3, conflict 2)" in shown.user and "validity" not in shown.user
    assert EMPTY_MEMORY in empty.user and "support" not in empty.user
    assert shown.messages[:-1] == empty.messages[:-1]  # the system message and examples are common
    head = shown.user.split("Memory")[0]
    assert head == empty.user.split("Memory")[0]
    assert shown.options == empty.options == choices


def test_validity_is_shown_for_tepa_and_its_variants_only():
    for name in ("tepa", "tepa-norev", "tepa-full", "tepa-paper"):
        assert shows_validity(make_memory(name)), name
    for name in ("append-only", "lww", "no-memory", "reactive-forgetting", "oracle-reset"):
        assert not shows_validity(make_memory(name)), name


def test_free_text_options_are_the_distinct_shown_values_in_order():
    records = [Record("k", v, 1, 0, ACTIVE, 0, 0) for v in ("b", "a", "b")]
    assert options_for(records, ()) == ("b", "a")
    assert options_for(records, ("x", "y")) == ("x", "y")
    assert options_for([], ()) == ()


def test_an_agent_binds_the_memory_and_the_task_text_to_a_language_model_reader():
    from tepa_envs.agents.readers.lm_base import LMReader
    from tepa_envs.agents.readers.lm_cache import CachedDecision

    prompts = []

    class FirstOption(LMReader):
        model_id = "first-option"

        def _decide(self, prompt):
            prompts.append(prompt)
            return CachedDecision(prompt.options[0], {})

    env = gym.make("TEPA/RegimeDrift-v0", phase_lengths=(2, 2, 2, 2))
    reader = FirstOption(cache=False)
    agent = MemoryAgent("tepa", reader)
    assert reader.validity
    _, info = env.reset(seed=0)
    agent.reset(env, 0)
    assert agent.act(info) == 0
    assert prompts[-1].user.startswith(f"Task: {info['context']}")


def test_hidden_validity_renders_tepa_records_like_every_other_memory_s():
    from tepa_envs.agents.readers.lm_base import LMReader
    from tepa_envs.agents.readers.lm_cache import CachedDecision

    class FirstOption(LMReader):
        model_id = "first-option"

        def _decide(self, prompt):
            return CachedDecision(prompt.options[0], {})

    record = Record("k", "tool_2", 5, 0, ACTIVE, 80, 99, 6 / 7)
    shown, hidden = FirstOption(cache=False), FirstOption(cache=False, validity="hidden")
    for reader in (shown, hidden):
        MemoryAgent("tepa", reader)
        reader.begin_task({"context": REGIME_TASK})
    assert shown.validity and not hidden.validity
    assert "validity 0.86" in shown.prompt_for([record], TOOLS).user
    hidden_prompt = hidden.prompt_for([record], TOOLS)
    assert "validity" not in hidden_prompt.text()
    plain = FirstOption(cache=False)
    MemoryAgent("append-only", plain)
    plain.begin_task({"context": REGIME_TASK})
    assert hidden_prompt.text() == plain.prompt_for([record], TOOLS).text()


@pytest.mark.parametrize("bad, error", [(None, TypeError), (0, TypeError), ("never", ValueError), ("", ValueError)])
def test_a_bad_validity_mode_is_refused_naming_the_field(bad, error):
    from tepa_envs.agents.readers.lm_base import LMReader

    with pytest.raises(error, match="validity"):
        LMReader(cache=False, validity=bad)
