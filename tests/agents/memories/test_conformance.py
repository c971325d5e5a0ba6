"""The conformance kit passes every shipped method and names what a broken memory breaks."""

from __future__ import annotations

import random

import pytest

from tepa_envs.agents.memories import METHOD_NAMES, MemoryConformanceError, check_memory, make_memory
from tepa_envs.core import LifecycleState, Record
from tepa_envs.error import TepaError


@pytest.mark.parametrize("name", METHOD_NAMES)
def test_every_shipped_method_conforms(name):
    check_memory(make_memory(name), streams=3)


class Newest:
    name = "newest"

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.values: dict[str, str] = {}

    def observe(self, evidence) -> None:
        if evidence.outcome is not False:
            self.values[evidence.key] = evidence.value

    def retrieve(self, key: str, context: str = "") -> list[Record]:
        value = self.values.get(key)
        return [] if value is None else [Record(key, value, 1, 0, LifecycleState.ACTIVE, 0, 0)]


class NeverForgets(Newest):
    def reset(self) -> None:
        if not hasattr(self, "values"):
            self.values = {}


class ReturnsTuples(Newest):
    def retrieve(self, key: str, context: str = "") -> list:  # type: ignore[override]
        return [(key, v) for v in [self.values.get(key)] if v]


class Noisy(Newest):
    def retrieve(self, key: str, context: str = "") -> list[Record]:
        records = super().retrieve(key, context)
        return records if random.random() < 0.5 else []


def test_a_correct_user_memory_passes():
    check_memory(Newest())


@pytest.mark.parametrize("memory, check", [
    (NeverForgets(), "reset"), (ReturnsTuples(), "records"), (Noisy(), "determinism"),
])
def test_a_broken_memory_is_named_with_the_check_it_fails(memory, check):
    with pytest.raises(MemoryConformanceError, match=f"check_memory: {check}:"):
        check_memory(memory)


def test_missing_members_and_bad_arguments_are_refused():
    with pytest.raises(MemoryConformanceError, match="no callable observe"):
        check_memory(object())
    with pytest.raises(ValueError, match="streams"):
        check_memory(Newest(), streams=0)
    assert issubclass(MemoryConformanceError, TepaError)
