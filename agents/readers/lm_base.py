"""What every language-model reader shares: the prompt, the cache, the statistics, the errors.

A language-model reader is a drop-in for :class:`~tepa_envs.agents.readers.EvidenceReader`
(``reset(episode_seed)`` and ``choose(records, choices, stated)``) that also offers
the two optional hooks :class:`~tepa_envs.agents.readers.MemoryAgent` calls:
``bind_memory(memory)`` (does the memory's record score carry a validity?) and
``begin_task(info)`` (the task's text, ``info["context"]``). Every decision:

1. renders the prompt (:func:`~tepa_envs.agents.readers.prompt.render_prompt`) from
   the task's text, its choices and exactly the records the memory returned;
2. looks the decision up in the cache, keyed by (model identity, template
   version, prompt text, options);
3. otherwise asks the model (:meth:`LMReader._decide`), which must return one of
   the options; the decision is stored in the cache.

The value a task ``states`` (the preference stream) is in the task's text, which
the model reads; the argument itself is not used. A free-text task with nothing
retrieved is answered with the empty value without asking the model (there is
nothing to state). Every answer is one of the prompt's options: a model whose
answer cannot be mapped to one raises :class:`InvalidAnswer`, never a random action.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from tepa_envs.error import TepaError
from tepa_envs.core import Record

from tepa_envs.agents.readers.lm_cache import CachedDecision, DecisionCache, decision_key, open_cache
from tepa_envs.agents.readers.protocol import ReaderHooks
from tepa_envs.agents.readers.prompt import TEMPLATE_VERSION, Prompt, render_prompt, shows_validity

VALIDITY_MODES: tuple[str, ...] = ("auto", "hidden")
"""How a reader renders record scores: ``"auto"`` shows TEPA's validity (the template's
reading, :func:`~tepa_envs.agents.readers.prompt.shows_validity`); ``"hidden"`` never
shows one, so every memory's records read as the same kind of line."""


def check_validity_mode(validity: object) -> str:
    """``validity`` if it is one of :data:`VALIDITY_MODES` (``TypeError``/``ValueError`` naming the field)."""
    if not isinstance(validity, str):
        raise TypeError(f"validity must be a str, one of {', '.join(VALIDITY_MODES)}; got {type(validity).__name__}")
    if validity not in VALIDITY_MODES:
        raise ValueError(f"validity must be one of {', '.join(VALIDITY_MODES)}, got {validity!r}")
    return validity


class LMReaderError(TepaError, RuntimeError):
    """A language-model reader could not decide (never answered by a random action)."""


class InvalidAnswer(LMReaderError):
    """The model's answer names none of the options."""


class BudgetExhausted(LMReaderError):
    """The reader's budget of calls or tokens for this run is spent."""


class EndpointError(LMReaderError):
    """The endpoint failed: refused the request, or kept failing after the retries."""


@dataclass
class ReaderStats:
    """Counts of one reader instance's decisions.

    ``follow``: decisions where the memory showed a record whose value is one of
    the options, and the reader chose the first such value (the value the
    memory's top record names); ``shown`` counts those decisions.
    """

    decisions: int = 0
    model_calls: int = 0
    cache_hits: int = 0
    shown: int = 0
    follow: int = 0
    picks: dict[str, int] = field(default_factory=dict)

    @property
    def follow_rate(self) -> float | None:
        return self.follow / self.shown if self.shown else None

    def add(self, other: "ReaderStats") -> None:
        self.decisions += other.decisions
        self.model_calls += other.model_calls
        self.cache_hits += other.cache_hits
        self.shown += other.shown
        self.follow += other.follow
        for value, n in other.picks.items():
            self.picks[value] = self.picks.get(value, 0) + n


class LMReader(ReaderHooks):
    """Base of the language-model readers (see the module docstring).

    Subclasses set :attr:`model_id` (the identity the cache keys on) and implement
    :meth:`_decide`.

    Args:
        cache: the decision cache: ``None``/``True`` the default file
            (:func:`~tepa_envs.agents.readers.lm_cache.default_cache_path`), a path,
            a :class:`~tepa_envs.agents.readers.lm_cache.DecisionCache`, or ``False`` for none.
        validity: ``"auto"`` (default: TEPA's records show their validity) or
            ``"hidden"`` (no record shows one; see :data:`VALIDITY_MODES`).
    """

    model_id: str = ""

    def __init__(self, *, cache: DecisionCache | str | bool | None = None, validity: str = "auto") -> None:
        self.validity_mode = check_validity_mode(validity)
        self.cache = open_cache(cache)
        self.validity = False
        self.context = ""
        self.stats = ReaderStats()

    # ---------------------------------------------------------------- MemoryAgent hooks
    def bind_memory(self, memory: object) -> None:
        """Show validities when ``memory``'s record score is one (TEPA and its variants),
        unless the reader's ``validity`` is ``"hidden"``."""
        self.validity = self.validity_mode == "auto" and shows_validity(memory)

    def begin_task(self, info: Mapping[str, Any]) -> None:
        """Remember the task's text for the prompt of the coming decision(s)."""
        self.context = str(info.get("context", ""))

    def reset(self, episode_seed: int | None = None) -> None:
        """Nothing to reset: a decision depends on its prompt alone (deterministic)."""

    # ---------------------------------------------------------------- deciding
    def prompt_for(self, records: Sequence[Record], choices: Sequence[str]) -> Prompt:
        """The prompt of a decision on the current task."""
        return render_prompt(self.context, choices, records, validity=self.validity)

    def choose(self, records: Sequence[Record], choices: Sequence[str], stated: str | None = None) -> str:
        prompt = self.prompt_for(records, choices)
        if not prompt.options:
            return ""
        if len(prompt.options) == 1:
            choice = prompt.options[0]
        else:
            choice = self._select(prompt, self._cached_decision(prompt))
        self._count(records, prompt.options, choice)
        return choice

    def decide(self, prompt: Prompt) -> CachedDecision:
        """The decision on ``prompt`` (from the cache, or by asking the model)."""
        return self._cached_decision(prompt)

    def _cached_decision(self, prompt: Prompt) -> CachedDecision:
        key = decision_key(self.model_id, prompt.version, prompt.text(), prompt.options)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None and hit.choice in prompt.options:
                self.stats.cache_hits += 1
                return hit
        decision = self._decide(prompt)
        if decision.choice not in prompt.options:  # a subclass's bug, not a model's answer
            raise InvalidAnswer(f"{type(self).__name__} chose {decision.choice!r}, not one of {list(prompt.options)}")
        self.stats.model_calls += 1
        if self.cache is not None:
            self.cache.put(key, self.model_id, prompt.version, decision)
        return decision

    def _decide(self, prompt: Prompt) -> CachedDecision:
        """Ask the model: the option chosen (one of ``prompt.options``) and what it was chosen from."""
        raise NotImplementedError

    def _select(self, prompt: Prompt, decision: CachedDecision) -> str:
        """The option used for ``decision`` (a sampling reader overrides this)."""
        return decision.choice

    def _count(self, records: Sequence[Record], options: Sequence[str], choice: str) -> None:
        stats = self.stats
        stats.decisions += 1
        stats.picks[choice] = stats.picks.get(choice, 0) + 1
        top = next((r.value for r in records if r.value in options), None)
        if top is not None:
            stats.shown += 1
            stats.follow += choice == top


__all__ = ["VALIDITY_MODES", "BudgetExhausted", "check_validity_mode", "EndpointError", "InvalidAnswer", "LMReader", "LMReaderError", "ReaderStats",
           "TEMPLATE_VERSION"]
