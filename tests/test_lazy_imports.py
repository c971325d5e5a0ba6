"""Lazy package faces: importing one module loads only what it needs (counted in a fresh
interpreter), and every public name is still importable from its package."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def loaded_after(statement: str) -> list[str]:
    code = (f"import sys; before = set(sys.modules); {statement}; "
            "print(__import__('json').dumps(sorted(set(sys.modules) - before)))")
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


@pytest.mark.parametrize("statement, forbidden", [
    ("import tepa_envs.agents.memories.tepa", ("tepa_envs.agents.evaluation", "tepa_envs.agents.readers", "torch",
                                                "transformers", "ray", "matplotlib")),
    ("import tepa_envs.agents.readers.agent", ("tepa_envs.agents.evaluation", "tepa_envs.agents.readers.local_lm",
                                               "tepa_envs.agents.readers.openai_reader", "torch", "ray")),
    ("import tepa_envs.agents.evaluation.engine.store", ("tepa_envs.agents.evaluation.cli",
                                                         "tepa_envs.agents.evaluation.studies", "ray")),
])
def test_importing_one_module_loads_no_unrelated_room(statement, forbidden):
    loaded = loaded_after(statement)
    assert loaded, "the statement imported nothing: the test would pass vacuously"
    stray = [m for m in loaded if m.startswith(forbidden)]
    assert not stray, stray


def test_public_names_load_on_first_use():
    import tepa_envs.agents as agents
    from tepa_envs.agents import TEPA, MemoryAgent, evaluate
    from tepa_envs.agents.evaluation import summarize
    from tepa_envs.agents.readers import OpenAIReader

    assert callable(evaluate) and callable(summarize) and TEPA.name == "tepa"
    assert MemoryAgent.__module__ == "tepa_envs.agents.readers.agent"
    assert OpenAIReader.__module__ == "tepa_envs.agents.readers.openai_reader"
    assert {"evaluate", "TEPA", "make_memory"} <= set(dir(agents))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        agents.nothing_here  # noqa: B018
