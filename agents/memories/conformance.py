"""The memory conformance kit: :func:`check_memory`, the first step for a memory author.

As Gymnasium's ``check_env``, PettingZoo's ``parallel_api_test`` and river's
``check_estimator`` do for theirs, :func:`check_memory` runs a memory through the
protocol's contract (:class:`~tepa_envs.agents.memories.protocol.Memory`) on seeded
random evidence streams and raises :class:`MemoryConformanceError` naming the first
check that fails and how:

* **protocol**: ``observe``, ``retrieve`` and ``reset`` are callable; ``name``, when
  given, is a non-empty str;
* **records**: ``retrieve(key, context)`` returns a list of
  :class:`~tepa_envs.core.Record` whose values are str;
* **reset**: after ``reset()`` nothing is retrieved for any key;
* **determinism**: two copies fed the same stream show the same records;
* **read-only retrieval**: retrieving twice in a row shows the same records;
* **bad evidence** (memories built on :class:`~tepa_envs.agents.memories.protocol.MemoryBase`):
  evidence older than the last is refused with ``ValueError`` and changes nothing;
* **audit log** (memories that keep one, :class:`~tepa_envs.agents.memories.protocol.AuditedMemory`):
  ``audit_log`` is a tuple of :class:`~tepa_envs.core.AuditEvent` whose replay gives
  ``states()`` when the memory reports its states
  (:class:`~tepa_envs.agents.memories.protocol.ReportsStates`).

>>> from tepa_envs.agents.memories import make_memory
>>> check_memory(make_memory("tepa"))
>>> check_memory(make_memory("lww"), streams=3)
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

from tepa_envs.core import AuditEvent, Evidence, Record
from tepa_envs.error import TepaError

from tepa_envs.agents.memories.protocol import AuditedMemory, Memory, MemoryBase, ReportsStates
from tepa_envs.agents.memories.tepa import replay_audit

KEYS: tuple[str, ...] = ("doc/report/csv", "doc/invoice/json", "img/photo/png")
VALUES: tuple[str, ...] = ("tool_0", "tool_1", "tool_2")


class MemoryConformanceError(TepaError, AssertionError):
    """A memory breaks the protocol's contract; the message names the check."""


def random_stream(rng: np.random.Generator, length: int) -> list[Evidence]:
    """Evidence over :data:`KEYS` and :data:`VALUES` with successes, failures and
    assertions, in time order (ties allowed)."""
    t, out = 0, []
    for _ in range(length):
        t += int(rng.integers(0, 3))
        outcome = (True, False, None)[int(rng.integers(0, 3))]
        out.append(Evidence(KEYS[int(rng.integers(len(KEYS)))], VALUES[int(rng.integers(len(VALUES)))], t,
                            outcome, "check_memory"))
    return out


def view(memory: Any) -> list[list[tuple[Any, ...]]]:
    """What ``memory`` shows for every key (the fields of each record)."""
    return [[(r.key, r.value, r.support, r.conflict, r.state, r.score) for r in memory.retrieve(key, key)]
            for key in KEYS]


def _fail(check: str, message: str) -> MemoryConformanceError:
    return MemoryConformanceError(f"check_memory: {check}: {message}")


def check_protocol(memory: Any) -> None:
    for member in ("observe", "retrieve", "reset"):
        if not callable(getattr(memory, member, None)):
            raise _fail("protocol", f"{type(memory).__name__} has no callable {member}()")
    if isinstance(memory, Memory) and (not isinstance(memory.name, str) or not memory.name.strip()):
        raise _fail("protocol", f"name must be a non-empty str, got {memory.name!r}")


def check_records(memory: Any, stream: list[Evidence]) -> None:
    memory.reset()
    for evidence in stream:
        memory.observe(evidence)
        for key in KEYS:
            records = memory.retrieve(key, key)
            if not isinstance(records, list):
                raise _fail("records", f"retrieve() must return a list, got {type(records).__name__}")
            for record in records:
                if not isinstance(record, Record) or not isinstance(record.value, str):
                    raise _fail("records", f"retrieve() must return Records with str values, got {record!r:.80}")


def check_reset(memory: Any, stream: list[Evidence]) -> None:
    memory.reset()
    for evidence in stream:
        memory.observe(evidence)
    memory.reset()
    left = [key for key in KEYS if memory.retrieve(key, key)]
    if left:
        raise _fail("reset", f"after reset() it still retrieves records for {left}")


def check_determinism(memory: Any, stream: list[Evidence]) -> None:
    memory.reset()
    first, second = copy.deepcopy(memory), copy.deepcopy(memory)
    for evidence in stream:
        first.observe(evidence)
        second.observe(evidence)
        if view(first) != view(second):
            raise _fail("determinism", f"two copies fed the same evidence differ after {evidence}")


def check_read_only_retrieval(memory: Any, stream: list[Evidence]) -> None:
    memory.reset()
    for evidence in stream:
        memory.observe(evidence)
        if view(memory) != view(memory):
            raise _fail("read-only retrieval", f"retrieving twice shows different records after {evidence}")


def check_bad_evidence(memory: Any, stream: list[Evidence]) -> None:
    if not isinstance(memory, MemoryBase) or not stream:
        return
    memory.reset()
    for evidence in stream:
        memory.observe(evidence)
    last = stream[-1]
    if last.t == 0:
        return
    before = view(memory)
    try:
        memory.observe(Evidence(last.key, last.value, last.t - 1, True, "check_memory"))
    except ValueError:
        pass
    else:
        raise _fail("bad evidence", "evidence older than the last was accepted")
    if view(memory) != before:
        raise _fail("bad evidence", "refused evidence changed what the memory shows")


def check_audit_log(memory: Any, stream: list[Evidence]) -> None:
    audited = memory if isinstance(memory, AuditedMemory) else None
    if audited is None:
        return
    memory.reset()
    for evidence in stream:
        memory.observe(evidence)
    log = audited.audit_log
    if not isinstance(log, tuple) or not all(isinstance(event, AuditEvent) for event in log):
        raise _fail("audit log", "audit_log must be a tuple of AuditEvent")
    if isinstance(memory, ReportsStates) and replay_audit(log) != memory.states():
        raise _fail("audit log", "replaying audit_log does not give states()")


CHECKS: tuple[Callable[[Any, list[Evidence]], None], ...] = (
    check_records, check_reset, check_determinism, check_read_only_retrieval, check_bad_evidence, check_audit_log)
"""The checks run on every stream, in order (after :func:`check_protocol`)."""


def check_memory(memory: Any, *, streams: int = 10, length: int = 60, seed: int = 0) -> None:
    """Run every check on ``memory`` over ``streams`` seeded random evidence streams of
    ``length`` each; :class:`MemoryConformanceError` names the first failure. The memory
    is reset before each check and left reset."""
    if isinstance(streams, bool) or not isinstance(streams, int) or streams < 1:
        raise ValueError(f"streams must be a positive int, got {streams!r}")
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be a positive int, got {length!r}")
    check_protocol(memory)
    rng = np.random.default_rng(seed)
    for _ in range(streams):
        stream = random_stream(rng, length)
        for check in CHECKS:
            check(memory, stream)
    memory.reset()


__all__ = ["CHECKS", "KEYS", "MemoryConformanceError", "VALUES", "check_memory", "random_stream"]
