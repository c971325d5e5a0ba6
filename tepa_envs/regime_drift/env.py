"""TEPA/RegimeDrift-v0: a tool regime that drifts, reverses and partly returns."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from tepa_envs.core import Evidence, check_int, check_probability
from tepa_envs.core.checks import check_phase_lengths
from tepa_envs.core.schedule import draw_phase_values
from tepa_envs.core.stream import Outcome, Task, TaskStreamEnv

TASK_TYPES = ("summarize", "classify", "extract", "translate", "aggregate", "validate")
DOMAINS = ("finance", "health", "legal", "retail", "travel", "energy")
INPUT_TYPES = ("csv", "json", "pdf", "html", "text", "xml")
MAX_KEYS = len(TASK_TYPES) * len(DOMAINS) * len(INPUT_TYPES)
"""Distinct keys the ``task_type/domain/input_type`` schema can name (6 * 6 * 6 = 216)."""
MAX_TOOLS = 64
"""Largest ``n_tools``: every task's text lists the tools, so 64 keeps a context
under about 700 characters (and the action space small enough to explore)."""


def key_names(n_keys: int) -> tuple[str, ...]:
    """Deterministic conflict keys ``task_type/domain/input_type`` for ``n_keys`` keys
    (at most :data:`MAX_KEYS`: the schema has no more distinct keys)."""
    check_int("n_keys", n_keys, low=1, high=MAX_KEYS)
    names = []
    for i in range(n_keys):
        names.append(f"{TASK_TYPES[i % len(TASK_TYPES)]}/{DOMAINS[(i // len(TASK_TYPES)) % len(DOMAINS)]}/"
                     f"{INPUT_TYPES[(i // (len(TASK_TYPES) * len(DOMAINS))) % len(INPUT_TYPES)]}")
    return tuple(names)


def task_context(t: int, key: str, tools: tuple[str, ...]) -> str:
    """The text of task ``t``: the same wording in every phase, only the key's words vary."""
    task_type, domain, input_type = key.split("/")
    return (f"Request #{t}: {task_type} the {domain} records provided as {input_type}. "
            f"Available tools: {', '.join(tools)}. Pick one tool.")


def corrupt_key(key: str, field: int, offset: int) -> str:
    """``key`` with schema field ``field`` replaced by another word of its vocabulary."""
    parts = key.split("/")
    vocabulary = (TASK_TYPES, DOMAINS, INPUT_TYPES)[field]
    parts[field] = vocabulary[(vocabulary.index(parts[field]) + offset) % len(vocabulary)]
    return "/".join(parts)


def build_world(rng: np.random.Generator, keys: tuple[str, ...], n_tools: int, total: int,
                light_fraction: float, return_fraction: float,
                key_noise: float, *, with_evidence_keys: bool = True
                ) -> tuple[np.ndarray, np.ndarray, list[str] | None]:
    """The hidden world of one episode, drawn from ``rng`` in a fixed order.

    Returns the regime (correct tool index per phase and key), the key index of
    every task, and the key every task's evidence is filed under (``None`` with
    ``with_evidence_keys=False``: the same random numbers are drawn in the same
    order, so ``rng`` ends in the same state, but the key list is not built).
    """
    regime = draw_phase_values(rng, len(keys), n_tools, light_fraction, return_fraction)
    task_keys = rng.integers(0, len(keys), size=total)
    noisy = rng.random(total) < key_noise
    field = rng.integers(0, 3, size=total)
    offset = rng.integers(1, len(TASK_TYPES), size=total)
    if not with_evidence_keys:
        return regime, task_keys, None
    evidence_keys = [
        corrupt_key(keys[int(k)], int(f), int(o)) if n else keys[int(k)]
        for k, n, f, o in zip(task_keys, noisy, field, offset)
    ]
    return regime, task_keys, evidence_keys


class RegimeDriftEnv(TaskStreamEnv):
    """
    ## Description

    A stream of tool-use tasks. Each task has a conflict key
    ``task_type/domain/input_type`` and can be solved by exactly one of
    ``n_tools`` tools; a hidden regime decides which tool works for each key.
    The visible context stays the same in wording across phases; only the
    hidden correct tool changes:

    1. **stable**: the initial regime.
    2. **light drift**: a ``light_drift_fraction`` of keys switch tools.
    3. **full reversal**: every key switches to a tool it has not used before.
    4. **partial return**: a ``partial_return_fraction`` of keys return to
       their stable tool; the rest keep the reversed one.

    Keys are drawn uniformly at random for each task (from the seed). Executors
    are deterministic: the right tool always works, every other tool fails.

    ## Action Space

    ``Discrete(n_tools)``: the tool used for the task.

    ## Observation Space

    ``MultiDiscrete([n_keys, n_tools + 1, 2])``: the index of the task's key,
    the tool used in the previous step (``n_tools`` before the first step) and
    whether it succeeded. The correct tool is never observable.

    ## Rewards

    1.0 when the tool solves the task, 0.0 otherwise.

    ## Episode End

    Terminates after the last task of the partial-return phase
    (``sum(phase_lengths)`` steps). There is no truncation.

    ## Evidence

    A step reveals one :class:`~tepa_envs.core.Evidence`: the tool used, its
    outcome (``True``/``False``) and ``source="executor"``; the executor's
    message is in ``info["message"]``. Nothing reveals which tool would have
    worked. With ``key_noise > 0`` the evidence is filed under a wrong key with
    that probability: one field of the key schema is replaced by another word
    of its vocabulary (the paper's key-noise study).

    ## Arguments

    * ``phase_lengths``: tasks in each of the four phases (default ``(40, 40, 40, 40)``):
      a tuple or list of four ints, each from 1 to ``MAX_PHASE_LENGTH`` (10**6).
    * ``n_tools``: number of tools (default 3, at least 3 so that reversal can
      avoid both earlier tools, at most ``MAX_TOOLS`` = 64: every task's text
      lists the tools).
    * ``n_keys``: number of distinct conflict keys (default 1: one tool regime,
      as in the paper's controlled drift; each extra key must be relearned
      separately after every change), at most ``MAX_KEYS`` = 216, the keys the
      ``task_type/domain/input_type`` schema can name (6 * 6 * 6).
    * ``light_drift_fraction``: fraction of keys that change in light drift (default 0.5).
    * ``partial_return_fraction``: fraction of keys that return (default 0.5).
    * ``key_noise``: probability that a step's evidence carries a wrong key (default 0.0).
    * ``trial_cost``: what a held-out :meth:`trial` costs: ``"free"`` (default)
      or ``"task"`` (each trial forfeits one task of the stream, for an
      equal-budget comparison; details in :class:`~tepa_envs.core.stream.TaskStreamEnv`).
    * ``render_mode``: ``None`` or ``"ansi"``; any other mode is accepted, as in
      Gymnasium's own environments, and ``render()`` then warns and returns ``None``.
    """

    def __init__(self, phase_lengths: tuple[int, int, int, int] = (40, 40, 40, 40),
                 n_tools: int = 3, n_keys: int = 1, light_drift_fraction: float = 0.5,
                 partial_return_fraction: float = 0.5, key_noise: float = 0.0,
                 render_mode: str | None = None, trial_cost: str = "free") -> None:
        phase_lengths = check_phase_lengths(phase_lengths)  # a dict or a huge length: refused before any allocation
        self.n_tools = check_int("n_tools", n_tools, low=3, high=MAX_TOOLS)
        self.keys = key_names(n_keys)
        self.n_keys = len(self.keys)
        self.light_drift_fraction = check_probability("light_drift_fraction", light_drift_fraction)
        self.partial_return_fraction = check_probability("partial_return_fraction", partial_return_fraction)
        self.key_noise = check_probability("key_noise", key_noise)
        super().__init__(phase_lengths, tuple(f"tool_{i}" for i in range(self.n_tools)), render_mode,
                         trial_cost=trial_cost)
        self.observation_space = gym.spaces.MultiDiscrete([self.n_keys, self.n_tools + 1, 2])
        self._key_index = {k: i for i, k in enumerate(self.keys)}

    def _build(self, rng: np.random.Generator) -> None:
        self.regime, self.task_keys, self.evidence_keys = build_world(
            rng, self.keys, self.n_tools, self.schedule.total, self.light_drift_fraction,
            self.partial_return_fraction, self.key_noise)
        self._previous = (self.n_tools, 0)

    def _correct_index(self, t: int, key_index: int) -> int:
        return int(self.regime[self.schedule.phase_of(t), key_index])

    def _present(self, t: int) -> Task:
        k = int(self.task_keys[t])
        return Task(self.keys[k], task_context(t, self.keys[k], self.values),
                    self.values[self._correct_index(t, k)])

    def _execute(self, t: int, task: Task, value: str) -> Outcome:
        success = value == task.correct
        message = "completed" if success else f"{value} rejected the request: unsupported operation"
        evidence_key = self.evidence_keys[t]
        evidence = Evidence(evidence_key, value, t, success, "executor")
        self._previous = (self.to_action(value), int(success))
        return Outcome(success, (evidence,), message)

    def _trial(self, key: str, value: str) -> bool:
        if key not in self._key_index:
            return False
        return self.values[self._correct_index(self.t, self._key_index[key])] == value

    def _observation(self, t: int, task: Task | None) -> np.ndarray:
        key_index = self._key_index[task.key] if task is not None else 0
        if t == 0:
            self._previous = (self.n_tools, 0)
        return np.array([key_index, *self._previous], dtype=np.int64)

    def regime_table(self) -> dict[str, Any]:
        """The hidden regime per phase, for evaluation and tests only."""
        return {key: [self.values[int(v)] for v in self.regime[:, i]] for i, key in enumerate(self.keys)}
