"""TEPA/PreferenceStream-v0: a user whose preferences drift, among transient noise."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from tepa_envs.core import Evidence, check_choice, check_int, check_positive_int, check_probability, check_str
from tepa_envs.core.checks import check_phase_lengths
from tepa_envs.preferences.users import (
    MAX_VALUES,
    PROFILE_CONTEXTS,
    SLOT_REQUESTS,
    SLOT_VALUES,
    SLOTS,
    UserWorld,
    draw_user,
    parse_statement,
    preference_keys,
    session_tail,
    slot_of,
    statement,
)
from tepa_envs.core.drift import DriftSchedule, refuse_outcome_model, resolve_schedule
from tepa_envs.core.step_info import DEFAULT_INFO_SCHEMA
from tepa_envs.core.notify import DEFAULT_DETECT_DELAY, DEFAULT_FALSE_ALARM_RATE, DEFAULT_NOTIFY, check_notify
from tepa_envs.core.contracts import DriftPhases
from tepa_envs.core.stream import Outcome, Task, TaskStreamEnv, check_observe_truth
from tepa_envs.error import ResetNeeded


class PreferenceStreamEnv(DriftPhases, TaskStreamEnv):
    """
    ## Description

    A stream of assistant sessions with one simulated user per episode (a new
    user per seed: the population is the set of seeds). The user has
    preference slots (``cuisine``, ``tone``, ``answer_length``,
    ``output_format``, and optionally ``units``, ``language``) whose values
    depend on the profile context (``work``, ``home``, ``travel``); the conflict
    key is ``slot@profile_context``. A session is one task: the agent chooses a
    value for the session's slot in its profile context, and the user's
    feedback says whether it was right.

    * **Stated preferences.** With probability ``stated_rate`` a session's text
      states the current preference (``The user says: "My tone is casual these
      days."``), so an agent without memory does well on those sessions.
      :meth:`stated_value` parses it from the text.
    * **Drift.** The user's preferences change at the phase boundaries:
      1. **stable**: the initial preferences;
      2. **light drift**: a ``light_drift_fraction`` of keys change;
      3. **full reversal**: every key changes to a value it has not had;
      4. **partial return**: a ``partial_return_fraction`` of keys return to
         their stable value, the rest keep the reversed one.
    * **Transient noise.** With probability ``noise_rate`` a session's feedback
      is a one-off bug: the *reported* outcome is the opposite of the true one
      for that session only; the preference itself does not change. Noise on a
      key is at least ``noise_gap`` sessions of that key apart, so every noisy
      report is followed by several honest ones: a memory should not adopt it.
      (TEPA revokes on two failures among a precedent's last three outcomes; a
      gap of 6 keeps two noisy reports out of one such window unless the agent
      strays from its remembered value in four of the five sessions between.)
      At the defaults about 4% of sessions are noisy (5% drawn, minus the
      draws that fall inside a key's gap).
    * **Similar contexts.** Texts of different profiles share every word but the
      profile's name, so a similarity-based retriever can surface a stale profile.

    Any other drift of the preferences is a ``schedule`` (:mod:`tepa_envs.core.drift`):
    segments that switch, return or keep a share of the keys, gradually (``ramp``),
    asynchronously (``spread``) or at random change points (``hazard``), e.g.
    ``schedule="recurring"`` or ``"poisson"``. Noisy outcomes and Zipf key frequency
    do not apply (the feedback has its own transient noise, and sessions pick their
    key by profile).

    Sessions draw their key at random: each user has a main profile (drawn per
    user) that takes a ``main_profile_share`` of the sessions; the other
    profiles share the rest, and slots are uniform within a profile. Everything
    (main profile, preferences, which keys change, sessions, statements, noise,
    wordings) is drawn from the seed, in a fixed order, by
    :func:`~tepa_envs.preferences.users.draw_user`.

    ## Action Space

    ``Discrete(n_slots * n_values)``: an index into :attr:`values`, the union of
    every slot's values (values are unique across slots). ``choices(key)`` gives
    the values of the key's slot; choosing a value of another slot is wrong.

    ## Observation Space

    ``MultiDiscrete([n_slots, n_contexts, n_values + 1, n_slots * n_values + 1, 2])``:
    the session's slot and profile, the index (within the slot) of the value its
    text states (``n_values`` when none is stated), the action of the previous
    session (``n_slots * n_values`` before the first) and the feedback the user
    *reported* for it (noisy). The true preference is never observable.

    With ``notify="known"`` or ``"detected"`` the observation gains one component of
    size 2 after these: ``1`` when the change flag is raised on the task now
    presented (``info["notified"]``), else ``0``. With ``observe_truth=True`` (the
    ``*-MDP-v0`` twins) it gains, last, a component of size ``n_slots * n_values + 1``: the index
    of the presented task's correct value (an action index) (the one ``info["oracle"]["correct"]``
    names; ``n_slots * n_values`` at the terminal step). So the space is ``MultiDiscrete(nvec)``
    with ``nvec`` the list above, then ``2`` when notified, then ``n_slots * n_values + 1`` for a twin.

    ## Rewards

    1.0 when the chosen value is the user's true current preference for the key,
    0.0 otherwise. ``info["success"]`` is this true outcome; transient noise
    changes only what the user reports (the evidence), never the reward.

    ## Episode End

    Terminates after the last session of the partial-return phase
    (``sum(phase_lengths)`` steps; with another ``schedule``, of its last phase).
    There is no truncation.

    ## Evidence

    A step reveals one :class:`~tepa_envs.core.Evidence`:
    ``Evidence(key, value_used, t, reported_outcome, "user-feedback")``, where
    ``reported_outcome`` is the true outcome except on noisy sessions. Stated
    preferences are *not* emitted as evidence: they are part of the visible
    context (the reader reads them before acting), and as in the paper a memory
    learns from the binary feedback that follows an action.

    ## Trials

    ``trial(kind, key, value)`` answers a held-out session for ``key`` from the
    current hidden state: ``True`` exactly when ``value`` is the user's true
    preference now (trials are noise-free, like a controlled check). A trial
    never advances the stream, never draws from the episode's random generator
    and, with the default ``trial_cost="free"``, never changes an outcome (with
    ``"task"`` it forfeits the next task, see ``trial_cost``). Unknown keys fail
    their trials.

    ## Defaults

    Each default, and why:

    * ``main_profile_share = 0.8``: a user spends most sessions in one context;
      the 80/20 rule of thumb gives the main profile four sessions in five (its
      4 keys recur about 8 times per phase), and the two occasional profiles
      share the rest, so their keys recur rarely and texts that differ only in
      the profile's name can mislead a similarity retriever.
    * ``stated_rate = 0.85``: most sessions restate what the user wants, so an
      agent without memory is a strong baseline and a memory must not override
      a statement it contradicts.
    * ``noise_rate = 0.05``, ``noise_gap = 6``: one session in twenty gets a
      one-off wrong report, never two close together on one key.
    * ``light_drift_fraction = 0.25``: light drift changes one key in four.

    None of these was chosen to reproduce a published number; the README varies
    ``main_profile_share`` and the reader beside the main table.

    ## Info

    With ``info_schema="fixed"`` every ``info`` (reset, every step, the terminal
    step) has the same keys with values of fixed type, sentinels where a value does
    not apply (:mod:`tepa_envs.core.step_info`): ``key`` (str, ``""``),
    ``context`` (str, ``""``), ``t`` (int), ``scored`` (bool, ``False`` at reset),
    ``success`` (bool, ``False`` unless scored), ``message`` (str, ``""``),
    ``evidence`` (``{"count", "key", "value", "t", "outcome", "source"}``: the
    number of evidence and the first one, ``outcome`` 1 / 0 / -1; ``0, "", "",
    -1, -1, ""`` when none), ``oracle`` (``{"phase", "phase_name",
    "phase_changed", "correct"}``; ``-1, "", False, ""`` at the terminal step) and
    ``forfeited`` (bool). With ``"rich"`` (the variable view)
    ``evidence`` is the list of :class:`~tepa_envs.core.Evidence`, ``success`` and
    ``message`` are present only after a step, ``oracle`` only while a task is
    presented and ``forfeited`` only with ``trial_cost="task"``. Either way
    ``env.unwrapped.last_evidence`` is the last step's evidence list. With ``notify="known"`` or ``"detected"``
    every ``info`` of either schema also has ``notified`` (bool: the change flag of the
    task now presented, ``False`` at reset's first presentation of a key and at the
    terminal step); with ``notify="none"`` (default) the key is absent.

    ## Rendering

    ``metadata["render_modes"]`` is ``["ansi", "human", "rgb_array"]``
    (``render_fps`` 4). ``"rgb_array"`` frames are ``uint8`` arrays of shape
    ``(256, 512, 3)`` (:data:`~tepa_envs.core.render.FRAME_SHAPE`): the task now
    presented, the last step, the recent outcomes and the phase timeline with a
    cursor at ``t``, so ``gymnasium.wrappers.RecordVideo`` records episodes.

    ## Arguments

    * ``phase_lengths``: sessions in each of the four phases (default ``(40, 40, 40, 40)``):
      a tuple or list of four ints, each from 1 to ``MAX_PHASE_LENGTH`` (10**6).
    * ``n_slots``: preference slots, 4 to 6 (default 4).
    * ``n_contexts``: profile contexts, 1 to 3 (default 3: ``work``, ``home``, ``travel``).
    * ``n_values``: values per slot, 3 to 6 (default 5).
    * ``stated_rate``: probability that a session states the preference (default 0.85).
    * ``noise_rate``: probability that a session's feedback is transient noise (default 0.05).
    * ``noise_gap``: minimum sessions of a key between two noisy ones (default 6).
    * ``main_profile_share``: share of sessions in the user's main profile (default 0.8).
    * ``light_drift_fraction``: fraction of keys that change in light drift (default 0.25).
    * ``partial_return_fraction``: fraction of keys that return (default 0.5).
    * ``trial_cost``: what a held-out :meth:`trial` costs: ``"free"`` (default)
      or ``"task"`` (each trial forfeits one task of the stream, for an
      equal-budget comparison; details in :class:`~tepa_envs.core.stream.TaskStreamEnv`).
    * ``render_mode``: ``None``, ``"ansi"`` (the last step as a line of text),
      ``"human"`` (that line printed to stdout at every step) or ``"rgb_array"`` (a
      ``uint8`` picture of the stream, see "Rendering"); any other mode is accepted,
      as in Gymnasium's own environments, and ``render()`` then warns and returns ``None``.
    * ``info_schema``: ``"fixed"`` (default) or ``"rich"``, see "Info".
    * ``notify``: change notification (:mod:`tepa_envs.core.notify`): ``"none"``
      (default: nothing is told, everything exactly as without the argument),
      ``"known"`` (a flag on the first task that presents a key after a true change
      of its correct value) or ``"detected"`` (the same flag from a noisy detector,
      see ``detect_delay`` and ``false_alarm_rate``). With ``"known"`` or
      ``"detected"`` the observation gains the flag and every ``info`` the key
      ``notified``; see "Observation Space" and "Info".
    * ``detect_delay``: with ``notify="detected"``, the mean of the detector's
      geometric delay in presentations of the changed key (default 1.0; 0 flags
      every change on its first task; at most 1000). Checked, and ignored, at the
      other levels.
    * ``false_alarm_rate``: with ``notify="detected"``, the probability that a
      presentation of a key (after its first) raises a false alarm (default 0.02,
      in [0, 1]). Checked, and ignored, at the other levels.
    * ``observe_truth``: ``True`` makes the fully observed twin (the ``*-MDP-v0``
      ids register it): the observation gains, last, the index of the presented
      task's correct value (default ``False``); see "Observation Space".
    * ``schedule``: the preferences' drift: ``"paper"`` (default, the four phases
      above), another preset of :data:`~tepa_envs.core.drift.PRESETS` built over
      ``phase_lengths`` (``"gradual"``, ``"async"``, ``"recurring"``, ``"poisson"``;
      ``"noisy"`` and ``"zipf"`` are refused), or a
      :class:`~tepa_envs.core.drift.DriftSchedule` or its dict form, which sets its
      own segments (at most ``MAX_SEGMENTS`` = 1000 of at most ``MAX_PHASE_LENGTH``
      sessions); ``phase_lengths`` and the fractions must then keep their defaults.
    """

    def __init__(self, phase_lengths: tuple[int, int, int, int] = (40, 40, 40, 40),
                 n_slots: int = 4, n_contexts: int = 3, n_values: int = 5,
                 stated_rate: float = 0.85, noise_rate: float = 0.05, noise_gap: int = 6,
                 main_profile_share: float = 0.8, light_drift_fraction: float = 0.25,
                 partial_return_fraction: float = 0.5, render_mode: str | None = None,
                 trial_cost: str = "free", schedule: str | DriftSchedule | Mapping[str, Any] = "paper",
                 info_schema: str = DEFAULT_INFO_SCHEMA, notify: str = DEFAULT_NOTIFY,
                 detect_delay: float = DEFAULT_DETECT_DELAY, false_alarm_rate: float = DEFAULT_FALSE_ALARM_RATE,
                 observe_truth: bool = False) -> None:
        check_notify(notify, detect_delay, false_alarm_rate)  # refused before any state changes
        check_observe_truth(observe_truth)
        phase_lengths = check_phase_lengths(phase_lengths)  # a dict or a huge length: refused before any allocation
        self.n_slots = check_int("n_slots", n_slots, low=4, high=len(SLOTS))
        self.n_contexts = check_int("n_contexts", n_contexts, low=1, high=len(PROFILE_CONTEXTS))
        self.n_values = check_int("n_values", n_values, low=3, high=MAX_VALUES)
        self.stated_rate = check_probability("stated_rate", stated_rate)
        self.noise_rate = check_probability("noise_rate", noise_rate)
        self.noise_gap = check_positive_int("noise_gap", noise_gap)
        self.main_profile_share = check_probability("main_profile_share", main_profile_share)
        self.light_drift_fraction = check_probability("light_drift_fraction", light_drift_fraction)
        self.partial_return_fraction = check_probability("partial_return_fraction", partial_return_fraction)
        self.drift = refuse_outcome_model(
            resolve_schedule(schedule, phase_lengths, self.light_drift_fraction, self.partial_return_fraction,
                             default_fractions=(0.25, 0.5)),
            "TEPA/PreferenceStream-v0", "the user's feedback has its own transient noise (noise_rate) and sessions "
            "pick their key by profile (main_profile_share)")
        self.keys = preference_keys(self.n_slots, self.n_contexts)
        self.world: UserWorld | None = None  # drawn at each reset
        self.slot_values = {slot: SLOT_VALUES[slot][: self.n_values] for slot in SLOTS[: self.n_slots]}
        super().__init__(self.drift, tuple(v for vs in self.slot_values.values() for v in vs), render_mode,
                         trial_cost=trial_cost,
                         info_schema=info_schema, notify=notify, detect_delay=detect_delay,
                         false_alarm_rate=false_alarm_rate, observe_truth=observe_truth)
        self._key_index = {k: i for i, k in enumerate(self.keys)}
        n_actions = len(self.values)
        self.observation_space = self._observation_space(
            [self.n_slots, self.n_contexts, self.n_values + 1, n_actions + 1, 2])
        self._previous = (n_actions, 0)
        # The step path's constants, per key index: its slot's values, the observation's slot and
        # profile indices, the session text after "Session {t}" per request wording, and the
        # statement of each of its slot's values (session_text's pieces).
        self._key_values = [self.slot_values[slot_of(key)] for key in self.keys]
        self._key_fields = [(SLOTS.index(slot_of(key)), PROFILE_CONTEXTS.index(key.partition("@")[2]))
                            for key in self.keys]
        n_requests = len(next(iter(SLOT_REQUESTS.values())))
        self._session_tails = [[session_tail(key, request) for request in range(n_requests)] for key in self.keys]
        self._statements = [[statement(key, value) for value in values]
                            for key, values in zip(self.keys, self._key_values)]
        self._presented: tuple[Task | None, int, int, int] = (None, 0, 0, 0)

    # ---------------------------------------------------------------- world
    def _build(self, rng: np.random.Generator) -> None:
        self.world = draw_user(rng, self.n_slots, self.n_contexts, self.n_values, self.schedule.total,
                               self.light_drift_fraction, self.partial_return_fraction,
                               self.main_profile_share, self.stated_rate, self.noise_rate, self.noise_gap,
                               self.drift)
        world = self.world
        if world.timeline is None:  # draw_user builds it from the schedule it is given
            raise RuntimeError("the user was drawn without a timeline")
        # The sessions as lists, and every session's preference (value index within its slot),
        # what preference(key, t) answers for the session's key.
        self._session_keys = world.session_key.tolist()
        self._session_stated = world.stated.tolist()
        self._session_requests = world.request.tolist()
        self._session_noisy = world.noisy.tolist()
        self._session_correct = world.timeline.task_values(world.session_key, world.ramp_draw).tolist()
        self._previous = (len(self.values), 0)

    def preference(self, key: str, t: int | None = None) -> str:
        """The user's true preference for ``key`` at session ``t`` (default: now).
        For evaluation and tests; agents never see it."""
        check_choice("key", key, self._key_index)
        index = self._world().value(self.t if t is None else t, self._key_index[key])
        return self.slot_values[slot_of(key)][index]

    def _present(self, t: int) -> Task:
        k = self._session_keys[t]
        index = self._session_correct[t]
        context = f"Session {t}{self._session_tails[k][self._session_requests[t]]}"  # session_text's
        if self._session_stated[t]:
            context += self._statements[k][index]
        task = Task(self.keys[k], context, self._key_values[k][index])
        slot, profile = self._key_fields[k]
        # what _observation would parse back from the text: the stated value's index, or n_values
        self._presented = (task, slot, profile, index if self._session_stated[t] else self.n_values)
        return task

    def _execute(self, t: int, task: Task, value: str) -> Outcome:
        # value is one of self.values (the base class resolved the action)
        success = value == task.correct
        reported = success != self._session_noisy[t]
        message = "user: that's what I wanted" if reported else "user: that's not what I wanted"
        self._previous = (self._value_index[value], 1 if reported else 0)
        return Outcome(success, (Evidence(task.key, value, t, reported, "user-feedback"),), message)

    def _trial(self, key: str, value: str) -> bool:
        return key in self._key_index and self.preference(key) == value

    def _observation(self, t: int, task: Task | None) -> np.ndarray:
        if task is None:
            return np.array([0, 0, self.n_values, *self._previous], dtype=np.int64)
        presented, slot_index, profile_index, stated_index = self._presented
        if presented is task:  # the task _present just built: its fields are known
            return np.array([slot_index, profile_index, stated_index, *self._previous], dtype=np.int64)
        slot, _, context = task.key.partition("@")
        stated = self.stated_value(task.key, task.context)
        stated_index = self.slot_values[slot].index(stated) if stated is not None else self.n_values
        return np.array([SLOTS.index(slot), PROFILE_CONTEXTS.index(context), stated_index, *self._previous],
                        dtype=np.int64)

    # ------------------------------------------------------- language agents
    def choices(self, key: str) -> tuple[str, ...]:
        """The values of ``key``'s slot."""
        check_choice("key", key, self._key_index)
        return self.slot_values[slot_of(key)]

    def stated_value(self, key: str, context: str) -> str | None:
        """The value the session text ``context`` states for ``key``, or ``None``."""
        check_str("key", key)
        check_str("context", context)
        if key not in self._key_index:
            return None
        value = parse_statement(key, context)
        return value if value in self.slot_values[slot_of(key)] else None

    def noisy_sessions(self) -> np.ndarray:
        """Indices of the sessions whose feedback is transient noise (evaluation only)."""
        return np.flatnonzero(self._world().noisy)

    def _world(self) -> UserWorld:
        world = self.world
        if world is None:
            raise ResetNeeded("call reset() before asking about the user")
        return world
