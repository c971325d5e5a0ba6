"""The simulated reader: a deterministic, seeded stand-in for a language model."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from tepa_envs.core import Record, check_int, check_probability


class EvidenceReader:
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

    Args:
        follow_prob: probability of following the prompt when it shows a usable value.
        stated_prob: probability of preferring a value stated in the context over
            a different remembered one.
        seed: seed of the reader's own random stream (combined with the episode seed).
    """

    def __init__(self, follow_prob: float = 0.95, stated_prob: float = 0.5, seed: int = 0) -> None:
        self.follow_prob = check_probability("follow_prob", follow_prob)
        self.stated_prob = check_probability("stated_prob", stated_prob)
        self.seed = check_int("seed", seed)
        self.rng = np.random.default_rng(seed)

    def reset(self, episode_seed: int | None = None) -> None:
        entropy = [self.seed] if episode_seed is None else [self.seed, episode_seed]
        self.rng = np.random.default_rng(entropy)

    def choose(self, records: Sequence[Record], choices: Sequence[str], stated: str | None = None) -> str:
        # Draw every number on every call so the stream of draws does not depend on the memory.
        follow_draw, explore_draw, stated_draw = self.rng.random(3)
        usable = [r.value for r in records if not choices or r.value in choices]
        if stated is not None:
            if not usable or usable[0] == stated or stated_draw < self.stated_prob:
                return stated
            return usable[0]
        if usable and follow_draw < self.follow_prob:
            return usable[0]
        if not choices:
            return usable[0] if usable else ""
        return choices[int(explore_draw * len(choices))]

    def __repr__(self) -> str:
        return (f"EvidenceReader(follow_prob={self.follow_prob}, stated_prob={self.stated_prob}, "
                f"seed={self.seed})")
