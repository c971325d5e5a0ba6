"""The simulated user of TEPA/PreferenceStream-v0: vocabulary, hidden world and session texts.

Everything here is drawn from the episode's random generator in a fixed order,
so one seed gives one user, one preference history and one session stream.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tepa_envs.core.drift import DriftSchedule, Timeline, draw_timeline
from tepa_envs.core.schedule import draw_phase_values

# Preference slots: each has its own vocabulary of values (no value is shared
# between slots, so a value names its slot) and request wordings.
SLOT_VALUES: dict[str, tuple[str, ...]] = {
    "cuisine": ("thai", "italian", "mexican", "japanese", "indian", "greek"),
    "tone": ("formal", "casual", "playful", "neutral", "enthusiastic", "dry"),
    "answer_length": ("one-line", "short", "medium", "detailed", "exhaustive", "bulleted-brief"),
    "output_format": ("markdown", "plain-text", "table", "json", "bullet-list", "numbered-list"),
    "units": ("metric", "imperial", "mixed-units", "si-strict", "us-customary", "scientific"),
    "language": ("english", "spanish", "french", "german", "portuguese", "italian-lang"),
}
SLOT_REQUESTS: dict[str, tuple[str, ...]] = {
    "cuisine": ("suggest a place to eat", "recommend a dish for tonight", "plan a quick meal"),
    "tone": ("draft a reply to a message", "write a short note", "answer an email"),
    "answer_length": ("explain a concept", "summarize an article", "answer a question"),
    "output_format": ("list the next steps", "compare two options", "organize some notes"),
    "units": ("give a distance estimate", "convert a recipe", "report the weather"),
    "language": ("translate a greeting", "write a reminder", "describe a plan"),
}
SLOT_NOUNS: dict[str, str] = {
    "cuisine": "cuisine", "tone": "tone", "answer_length": "answer length",
    "output_format": "output format", "units": "unit system", "language": "language",
}
SLOTS: tuple[str, ...] = tuple(SLOT_VALUES)
PROFILE_CONTEXTS: tuple[str, ...] = ("work", "home", "travel")
MAX_VALUES = min(len(v) for v in SLOT_VALUES.values())

_STATEMENT = re.compile(r'the user says: "my (?P<noun>[a-z ]+) is (?P<value>[a-z-]+) these days\."')


def slot_of(key: str) -> str:
    """The slot of a ``slot@profile_context`` key."""
    return key.partition("@")[0]


def preference_keys(n_slots: int, n_contexts: int) -> tuple[str, ...]:
    """Conflict keys ``slot@profile_context``, profile-major (all slots of ``work`` first)."""
    return tuple(f"{slot}@{context}" for context in PROFILE_CONTEXTS[:n_contexts] for slot in SLOTS[:n_slots])


def session_text(t: int, key: str, request: int, stated: str | None) -> str:
    """The context a language agent is shown for session ``t``.

    Profiles share every word but the profile's name, so texts of different
    profiles are near neighbours for a similarity-based retriever.
    """
    text = f"Session {t}{session_tail(key, request)}"
    return text if stated is None else text + statement(key, stated)


def session_tail(key: str, request: int) -> str:
    """What follows ``Session {t}`` in :func:`session_text` before any statement: the same
    for every session of ``key`` with wording ``request``."""
    slot, _, context = key.partition("@")
    return (f". Profile: {context}. The user asks you to {SLOT_REQUESTS[slot][request]}. "
            f"Choose the {SLOT_NOUNS[slot]} for this answer.")


def statement(key: str, stated: str) -> str:
    """The sentence :func:`session_text` appends when the session states ``stated`` for ``key``'s slot
    (what :func:`parse_statement` reads back)."""
    return f' The user says: "My {SLOT_NOUNS[slot_of(key)]} is {stated} these days."'


def parse_statement(key: str, context: str) -> str | None:
    """The value a session text states for ``key``'s slot, or ``None``."""
    match = _STATEMENT.search(context.lower())
    if match is None or match["noun"] != SLOT_NOUNS.get(slot_of(key)):
        return None
    value = match["value"]
    return value if value in SLOT_VALUES[slot_of(key)] else None


@dataclass(frozen=True)
class UserWorld:
    """One simulated user and the session stream of one episode.

    Attributes:
        main_profile: index of the profile context most of the user's sessions happen in.
        preference: value index per phase and key, shape ``(4, n_keys)``.
        session_key: key index of every session.
        stated: whether each session's text states the current preference.
        request: wording of each session's request.
        noisy: whether each session's feedback is transient noise (reported outcome flipped).
        timeline: every key's preference over time (when drawn with a schedule).
        ramp_draw: per session, the uniform number deciding gradual changes (``None`` without ramps).
    """

    main_profile: int
    preference: np.ndarray
    session_key: np.ndarray
    stated: np.ndarray
    request: np.ndarray
    noisy: np.ndarray
    timeline: Timeline | None = None
    ramp_draw: np.ndarray | None = None

    def value(self, t: int, key_index: int) -> int:
        """The preference (value index) of key ``key_index`` at session ``t``."""
        if self.timeline is None:  # drawn without a schedule: the phases' lengths are not known here
            raise ValueError("this UserWorld was drawn without a schedule: index its preference[phase, key]")
        return self.timeline.value(t, key_index, self.ramp_draw)


def key_weights(n_slots: int, n_contexts: int, main_profile: int, main_share: float) -> np.ndarray:
    """Probability of each key (profile-major order): the main profile takes
    ``main_share`` of the sessions, other profiles share the rest, slots are uniform."""
    if n_contexts == 1:
        profile = np.ones(1)
    else:
        profile = np.full(n_contexts, (1.0 - main_share) / (n_contexts - 1))
        profile[main_profile] = main_share
    return np.repeat(profile / n_slots, n_slots)


def draw_user(rng: np.random.Generator, n_slots: int, n_contexts: int, n_values: int, total: int,
              light_fraction: float, return_fraction: float, main_share: float,
              stated_rate: float, noise_rate: float, noise_gap: int,
              schedule: DriftSchedule | None = None) -> UserWorld:
    """Draw one user's preference history and session stream, in a fixed order (with a
    ``schedule``, its timeline replaces the four phases' values, and its ramp draws, if any,
    come last)."""
    n_keys = n_slots * n_contexts
    main_profile = int(rng.integers(n_contexts))
    timeline = None
    if schedule is None:
        preference = draw_phase_values(rng, n_keys, n_values, light_fraction, return_fraction)
    else:
        timeline = draw_timeline(rng, schedule, n_keys, n_values)
        preference = timeline.values
    weights = key_weights(n_slots, n_contexts, main_profile, main_share)
    session_key = rng.choice(n_keys, size=total, p=weights)
    stated = rng.random(total) < stated_rate
    request = rng.integers(0, len(next(iter(SLOT_REQUESTS.values()))), size=total)
    noise_draw = rng.random(total) < noise_rate
    ramp_draw = schedule.draw_ramp(rng, total) if schedule is not None else None
    return UserWorld(main_profile, preference, session_key, stated, request,
                     transient_noise(session_key, noise_draw, noise_gap), timeline, ramp_draw)


def transient_noise(session_key: np.ndarray, candidates: np.ndarray, gap: int) -> np.ndarray:
    """Keep a candidate noisy session only if its key's previous noisy session is
    at least ``gap`` sessions of that key earlier: each bug is a one-off."""
    noisy = [False] * len(session_key)
    seen: dict[int, int] = {}
    last_noise: dict[int, int] = {}
    for t, (key, candidate) in enumerate(zip(np.asarray(session_key).tolist(), np.asarray(candidates).tolist())):
        count = seen.get(key, 0)
        if candidate and count - last_noise.get(key, -gap) >= gap:
            noisy[t] = True
            last_noise[key] = count
        seen[key] = count + 1
    return np.array(noisy, dtype=bool)
