"""Calibrate a reader profile from any reader: how often it follows each kind of prompt.

The prompts are real: decisions recorded from episodes of ``TEPA/RegimeDrift-v0``
(read through TEPA, LWW, append-only and no memory) and
``TEPA/PreferenceStream-v0`` (whose task texts state values), on episode seeds from
:data:`CALIBRATION_SEEDS` on, so they are held out from every study that runs seeds
``0..N``. Each decision is sorted into one kind (:func:`prompt_kind`) and the first
``n`` of each kind are put to the reader under test, exactly as an episode would
(``bind_memory`` with a memory that shows validities or not, ``begin_task`` with the
task's text, then ``choose``). From the answers:

* ``follow_plain`` / ``follow_validity`` / ``follow_conflict``: the share ``p`` of
  answers naming the top record's value, corrected for the simulated reader's
  exploration, which also lands on that value one time in ``m`` (``m`` choices):
  ``f = (p - 1/m) / (1 - 1/m)``, clipped to [0, 1];
* ``stated_prob``: among answers naming either the stated value or the top record's
  (a different one), the share naming the stated value;
* ``empty_explore_prob``: with nothing shown, the share ``q`` of answers on the
  reader's most frequent option position (found on every other answer, measured on
  the rest, so chance does not inflate it); a reader that explores uniformly with
  probability ``e`` and otherwise takes one fixed option has
  ``q = 1 - e + e/m``, so ``e = (1 - q) m / (m - 1)``. The fallback is a fixed
  option (``"default"``); which position the reader favours is recorded in the
  profile's ``source`` (the environments' choices are symmetric, so the position
  does not change a simulated result).

Every parameter comes with its 95 % Wilson interval (``scipy.stats.binomtest``),
mapped through the same correction, and its count of decisions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import gymnasium as gym
import numpy as np
from scipy import stats

from tepa_envs.core import Record, check_int

from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.readers.agent import MemoryAgent, run_episode
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.profile import ReaderProfile
from tepa_envs.agents.readers.protocol import reader_hooks
from tepa_envs.agents.readers.prompt import shows_validity

KINDS: tuple[str, ...] = ("plain", "validity", "conflict", "stated", "empty")
CALIBRATION_SEEDS = 100_000
"""First episode seed the calibration prompts are recorded from (held out from studies)."""
SOURCES: tuple[tuple[str, str], ...] = (
    ("TEPA/RegimeDrift-v0", "tepa"), ("TEPA/RegimeDrift-v0", "append-only"), ("TEPA/RegimeDrift-v0", "lww"),
    ("TEPA/RegimeDrift-v0", "no-memory"), ("TEPA/PreferenceStream-v0", "lww"),
    ("TEPA/PreferenceStream-v0", "tepa"),
)
"""(environment, memory) pairs whose episodes the prompts are recorded from."""
PARAMETER_OF_KIND = {"plain": "follow_plain", "validity": "follow_validity", "conflict": "follow_conflict",
                     "stated": "stated_prob", "empty": "empty_explore_prob"}


@dataclass(frozen=True)
class Decision:
    """One recorded prompt: what a reader is asked, and which kind of prompt it is."""

    kind: str
    context: str
    choices: tuple[str, ...]
    records: tuple[Record, ...]
    stated: str | None
    validity: bool

    @property
    def top(self) -> str | None:
        """The value the memory's top usable record names."""
        return next((r.value for r in self.records if r.value in self.choices), None)


def prompt_kind(records: Sequence[Record], choices: Sequence[str], stated: str | None, validity: bool) -> str | None:
    """The kind of a decision (the simulated reader's precedence), or ``None`` for a
    decision no parameter describes (a free-text task; a statement the memory agrees with)."""
    if not choices:
        return None
    usable = [r.value for r in records if r.value in choices]
    if stated is not None:
        return "stated" if usable and usable[0] != stated else None
    if not usable:
        return "empty"
    if validity:
        return "validity"
    return "conflict" if len(set(usable)) > 1 else "plain"


class _Recorder(EvidenceReader):
    """The default simulated reader, noting every decision it is asked."""

    def __init__(self, sink: Callable[[Decision], None]) -> None:
        super().__init__()
        self.sink, self.context = sink, ""

    def begin_task(self, info: Mapping[str, Any]) -> None:
        self.context = str(info.get("context", ""))

    def choose(self, records: Sequence[Record], choices: Sequence[str], stated: str | None = None) -> str:
        kind = prompt_kind(records, choices, stated, self.validity_shown)
        if kind is not None:
            self.sink(Decision(kind, self.context, tuple(choices), tuple(records), stated, self.validity_shown))
        return super().choose(records, choices, stated)


def collect_decisions(n_per_kind: int, *, first_seed: int = CALIBRATION_SEEDS,
                      max_episodes: int = 2000) -> dict[str, list[Decision]]:
    """The first ``n_per_kind`` decisions of every kind, from episodes of :data:`SOURCES`
    on seeds ``first_seed, first_seed + 1, ...`` (at most one decision per kind per
    episode and source, so they spread over many episodes)."""
    check_int("n_per_kind", n_per_kind, low=1)
    found: dict[str, list[Decision]] = {kind: [] for kind in KINDS}
    for episode in range(max_episodes):
        for env_id, method in SOURCES:
            taken: set[str] = set()

            def keep(decision: Decision) -> None:
                if decision.kind not in taken and len(found[decision.kind]) < n_per_kind:
                    taken.add(decision.kind)
                    found[decision.kind].append(decision)

            env = gym.make(env_id)
            try:
                run_episode(env, MemoryAgent(method, _Recorder(keep)), first_seed + episode)
            finally:
                env.close()
        if all(len(found[kind]) >= n_per_kind for kind in KINDS):
            return found
    short = {kind: len(v) for kind, v in found.items() if len(v) < n_per_kind}
    raise RuntimeError(f"only {short} decisions of these kinds in {max_episodes} episodes")


_VALIDITY_MEMORY = make_memory("tepa")
_PLAIN_MEMORY = make_memory("lww")


def ask(reader: Any, decision: Decision, episode_seed: int) -> str:
    """The reader's answer to ``decision``, asked as an episode would ask it."""
    reader.reset(episode_seed)
    hooks = reader_hooks(reader)
    memory = _VALIDITY_MEMORY if decision.validity else _PLAIN_MEMORY
    assert shows_validity(memory) == decision.validity
    hooks.bind_memory(memory)
    hooks.begin_task({"context": decision.context})
    return str(reader.choose(list(decision.records), list(decision.choices), decision.stated))


@dataclass(frozen=True)
class KindEstimate:
    """One parameter measured from ``n`` decisions: the estimate and its 95 % interval."""

    parameter: str
    n: int
    hits: int
    estimate: float
    low: float
    high: float


def _wilson(hits: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    ci = stats.binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def _chance_corrected(p: float, m: float) -> float:
    return float(np.clip((p - 1.0 / m) / (1.0 - 1.0 / m), 0.0, 1.0))


def estimate_kind(kind: str, answers: Sequence[tuple[Decision, str]]) -> KindEstimate:
    """The parameter of ``kind`` from the reader's answers (module docstring)."""
    parameter = PARAMETER_OF_KIND[kind]
    m = float(np.mean([len(d.choices) for d, _ in answers])) if answers else 2.0
    if kind == "stated":
        sided = [(d, a) for d, a in answers if a in (d.stated, d.top)]
        hits, n = sum(a == d.stated for d, a in sided), len(sided)
        low, high = _wilson(hits, n)
        return KindEstimate(parameter, n, hits, hits / n if n else 0.5, low, high)
    if kind == "empty":
        # the favoured position is chosen on one half of the answers and its share measured on the
        # other, so a uniform explorer's largest share (above 1/m by chance) does not bias the estimate
        position = modal_position(answers[0::2])
        held_out = answers[1::2]
        hits, n = sum(d.choices.index(a) == position for d, a in held_out if a in d.choices), len(held_out)
        low, high = _wilson(hits, n)
        explore = [float(np.clip((1.0 - q) * m / (m - 1.0), 0.0, 1.0)) for q in (hits / max(n, 1), high, low)]
        return KindEstimate(parameter, n, hits, *explore)
    hits, n = sum(a == d.top for d, a in answers), len(answers)
    low, high = _wilson(hits, n)
    return KindEstimate(parameter, n, hits, *(_chance_corrected(p, m) for p in (hits / max(n, 1), low, high)))


def modal_position(answers: Sequence[tuple[Decision, str]]) -> int | None:
    """The option position the reader picks most often when nothing is shown."""
    positions = Counter(d.choices.index(a) for d, a in answers if a in d.choices)
    return positions.most_common(1)[0][0] if positions else None


def fit_profile(answers: Mapping[str, Sequence[tuple[Decision, str]]], *, name: str, source: str) -> ReaderProfile:
    """The profile the answers measure (one :func:`estimate_kind` per kind)."""
    estimates = {kind: estimate_kind(kind, answers.get(kind, ())) for kind in KINDS}
    position = modal_position(answers.get("empty", ()))
    values = {e.parameter: e.estimate for e in estimates.values()}
    return ReaderProfile(
        name, follow_plain=values["follow_plain"], follow_validity=values["follow_validity"],
        follow_conflict=values["follow_conflict"], stated_prob=values["stated_prob"],
        empty_explore_prob=values["empty_explore_prob"], empty_fallback="default",
        source=f"{source}; with nothing shown its most frequent option is position {position}",
        intervals={e.parameter: (e.low, e.high) for e in estimates.values()},
        counts={e.parameter: e.n for e in estimates.values()})


Progress = Callable[[int, int], None]


def calibrate(reader: Any, n_per_kind: int, *, name: str, source: str,
              progress: Progress | None = None) -> tuple[ReaderProfile, list[dict[str, Any]]]:
    """Measure ``reader``'s profile on ``n_per_kind`` recorded decisions of every kind.

    Returns the profile and one row per decision (kind, options, top, stated, answer)
    for the record."""
    decisions = collect_decisions(n_per_kind)
    answers: dict[str, list[tuple[Decision, str]]] = {kind: [] for kind in KINDS}
    rows: list[dict[str, Any]] = []
    total, done = sum(len(v) for v in decisions.values()), 0
    for kind in KINDS:
        for i, decision in enumerate(decisions[kind]):
            answer = ask(reader, decision, CALIBRATION_SEEDS + i)
            answers[kind].append((decision, answer))
            rows.append({"kind": kind, "options": list(decision.choices), "top": decision.top,
                         "stated": decision.stated, "validity": decision.validity, "answer": answer})
            done += 1
            if progress is not None:
                progress(done, total)
    return fit_profile(answers, name=name, source=source), rows


__all__ = ["CALIBRATION_SEEDS", "Decision", "KINDS", "KindEstimate", "SOURCES", "ask", "calibrate",
           "collect_decisions", "estimate_kind", "fit_profile", "modal_position", "prompt_kind"]
