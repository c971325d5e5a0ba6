"""An import path names a memory class: functions, builtins and classes without the
protocol are refused before anything is called or instantiated."""

import pytest

from tepa_envs.agents.memories.registry import load_class, make_memory
from tepa_envs.agents.memories.tepa import TEPA

CALLS = []


def factory():
    CALLS.append("factory")
    return TEPA()


class NotAMemory:
    def __init__(self):
        CALLS.append("NotAMemory")

    def observe(self, evidence):
        pass


@pytest.mark.parametrize("path, needle", [
    ("builtins:input", "builtin function, not a class"),
    ("sys:exit", "builtin function, not a class"),
    ("os:getcwd", "builtin function, not a class"),
    (f"{__name__}:factory", "a function, not a class"),
    ("tepa_envs.core:PHASE_NAMES", "not a class"),
    (f"{__name__}:NotAMemory", "no callable retrieve, reset"),
])
def test_import_paths_must_name_a_memory_class(path, needle):
    CALLS.clear()
    with pytest.raises(ValueError, match=needle):
        load_class(path)
    with pytest.raises(ValueError, match=needle):
        make_memory(path)
    assert CALLS == []  # nothing was called or instantiated


def test_a_memory_class_by_import_path_loads():
    assert load_class("tepa_envs.agents.memories.tepa:TEPA") is TEPA
    assert make_memory("tepa_envs.agents.memories.tepa:TEPA").name == "tepa"


def test_a_class_object_is_not_a_memory():
    with pytest.raises(TypeError, match="got the class TEPA.*'tepa_envs.agents.memories.tepa:TEPA'"):
        make_memory(TEPA)
