"""The simulated reader: a deterministic, seeded stand-in for a language model."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tepa_envs.core import Record, check_choice, check_int, check_probability

from tepa_envs.agents.readers.prompt import shows_validity
from tepa_envs.agents.readers.protocol import ReaderHooks

FALLBACKS: tuple[str, ...] = ("default", "repeat")
"""What the reader chooses when nothing usable is shown and it does not explore."""


class EvidenceReader(ReaderHooks):
    """Reads a prompt of retrieved records and picks a value.

    * The prompt shows records (in the memory's order): with probability
      ``follow_prob`` the reader uses the first shown value it can use;
      otherwise it explores.
    * The prompt shows nothing usable: it explores, choosing uniformly among
      the task's choices.

    * The task's context states a value (``stated``, e.g. a user saying what
      they want): the reader uses it, except that when the prompt's first
      record shows a different value it trusts the memory over the context with
      probability ``1 - stated_prob``.

    For free-text tasks (no choices) it answers with the first shown value, or
    an empty answer when nothing is shown.

    The same reader, with the same parameters, reads for every memory method.
    The defaults are used on every shipped environment (the harness's settings
    table, :mod:`tepa_envs.agents.evaluation.settings`, can override them per
    environment id; ``--reader-kwargs`` per run):

    * ``follow_prob = 0.95``: a reader that follows what its prompt shows 19
      times in 20 and strays otherwise (a capable but imperfect reader; 1.0 is
      the perfect reader of the limits the README reports);
    * ``stated_prob = 0.5``: when a task states a value that contradicts the
      prompt's first record, the reader has no ground to prefer either source
      and sides with each half of the time. It only matters where tasks state
      values (the preference stream).

    Both are varied in the README's robustness table (``follow_prob`` in
    {0.8, 0.9, 0.95, 1.0}, ``stated_prob`` in {0, 0.5, 1}).

    The kind of prompt may change how often a reader follows it, and a reader may
    not explore when the memory shows nothing; a reader profile
    (:mod:`~tepa_envs.agents.readers.profile`) sets these dimensions, whose defaults
    are the reader above:

    * ``follow_validity`` (default: ``follow_prob``): the records carry a validity
      (TEPA and its variants); takes precedence over the next kind;
    * ``follow_conflict`` (default: ``follow_prob``): the records name two or more
      different usable values (``follow_prob`` then covers one usable value);
    * ``empty_explore_prob`` (default 1) and ``empty_fallback`` (``"default"``: the
      first choice; ``"repeat"``: its own last choice, when it is one of this task's):
      nothing usable is shown.

    Args:
        follow_prob: probability of following the prompt when it shows a usable value.
        stated_prob: probability of preferring a value stated in the context over
            a different remembered one.
        seed: seed of the reader's own random stream (combined with the episode seed).
        follow_validity: ``follow_prob`` for records that show their validity.
        follow_conflict: ``follow_prob`` for records naming different usable values.
        empty_explore_prob: probability of exploring when nothing usable is shown.
        empty_fallback: what it chooses otherwise: ``"default"`` or ``"repeat"``.
    """

    def __init__(self, follow_prob: float = 0.95, stated_prob: float = 0.5, seed: int = 0, *,
                 follow_validity: float | None = None, follow_conflict: float | None = None,
                 empty_explore_prob: float = 1.0, empty_fallback: str = "default") -> None:
        self.follow_prob = check_probability("follow_prob", follow_prob)
        self.stated_prob = check_probability("stated_prob", stated_prob)
        self.seed = check_int("seed", seed)
        self.follow_validity = self.follow_prob if follow_validity is None else check_probability(
            "follow_validity", follow_validity)
        self.follow_conflict = self.follow_prob if follow_conflict is None else check_probability(
            "follow_conflict", follow_conflict)
        self.empty_explore_prob = check_probability("empty_explore_prob", empty_explore_prob)
        self.empty_fallback = check_choice("empty_fallback", empty_fallback, FALLBACKS)
        self.validity_shown = False
        self.last_choice: str | None = None
        self.rng = np.random.default_rng(seed)

    def bind_memory(self, memory: object) -> None:
        """Note whether ``memory``'s records show a validity (the reader hook
        :class:`~tepa_envs.agents.readers.agent.MemoryAgent` calls)."""
        self.validity_shown = shows_validity(memory)

    def reset(self, episode_seed: int | None = None) -> None:
        entropy = [self.seed] if episode_seed is None else [self.seed, episode_seed]
        self.rng = np.random.default_rng(entropy)
        self.last_choice = None

    def follow_prob_for(self, usable: Sequence[str]) -> float:
        """The probability of following records whose usable values are ``usable``."""
        if self.validity_shown:
            return self.follow_validity
        if len(set(usable)) > 1:
            return self.follow_conflict
        return self.follow_prob

    def choose(self, records: Sequence[Record], choices: Sequence[str], stated: str | None = None) -> str:
        # Draw every number on every call so the stream of draws does not depend on the memory.
        follow_draw, explore_draw, stated_draw = self.rng.random(3)
        usable = [r.value for r in records if not choices or r.value in choices]
        if stated is not None:
            if not usable or usable[0] == stated or stated_draw < self.stated_prob:
                choice = stated
            else:
                choice = usable[0]
        elif usable and follow_draw < self.follow_prob_for(usable):
            choice = usable[0]
        elif not choices:
            choice = usable[0] if usable else ""
        elif usable or follow_draw < self.empty_explore_prob:
            choice = choices[int(explore_draw * len(choices))]
        else:
            choice = self._fallback(choices)
        self.last_choice = choice
        return choice

    def _fallback(self, choices: Sequence[str]) -> str:
        if self.empty_fallback == "repeat" and self.last_choice in choices:
            return self.last_choice  # type: ignore[return-value]
        return choices[0]

    def __repr__(self) -> str:
        return (f"EvidenceReader(follow_prob={self.follow_prob}, stated_prob={self.stated_prob}, "
                f"seed={self.seed}, follow_validity={self.follow_validity}, follow_conflict={self.follow_conflict}, "
                f"empty_explore_prob={self.empty_explore_prob}, empty_fallback={self.empty_fallback!r})")
