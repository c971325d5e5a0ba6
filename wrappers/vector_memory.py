"""MemoryObservationV: a memory for every sub-environment of the native RegimeDrift vector env, batched in numpy.

:class:`~tepa_envs.wrappers.MemoryObservation` wraps one environment and keeps
one Python memory. Wrapping each of a vector env's sub-environments that way
(``SyncVectorEnv`` of ``MemoryObservation``) forfeits the native vector env. This
wrapper keeps the memories of all sub-environments in numpy arrays, one entry
per sub-environment, key and value, and updates them for all sub-environments in
one vectorised step. What each sub-environment observes is, entry for entry,
what ``MemoryObservation`` with the same memory would show it
(``tests/wrappers/test_vector_memory.py`` checks every step, autoresets included).
"""

from __future__ import annotations

from typing import Any, Sequence

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

from tepa_envs.agents.memories.baselines import AppendOnly
from tepa_envs.agents.memories.tepa import TEPA
from tepa_envs.agents.memories.tepa_choices import PRESETS
from tepa_envs.core import check_positive_int
from tepa_envs.regime_drift.vector import RegimeDriftVectorEnv
from tepa_envs.wrappers.memory_observation import memory_spaces, scaled_count

BATCHED_MEMORIES: tuple[str, ...] = ("no-memory", "lww", "append-only", "tepa", "tepa-norev")
"""The memories :class:`MemoryObservationV` batches (names as in the registry)."""

MAX_WINDOW = 62
"""Largest TEPA ``n_rec`` batched: a recent-outcome window is the low bits of an int64."""


class MemoryObservationV(VectorWrapper):
    """:class:`~tepa_envs.wrappers.MemoryObservation` for every sub-environment of
    :class:`~tepa_envs.regime_drift.vector.RegimeDriftVectorEnv`, with the memories
    batched in numpy arrays.

    The observation is a ``Dict`` batched from ``MemoryObservation``'s single
    observation space: ``"obs"`` (the vector env's observations) and
    ``"memory_value"``, ``"memory_validity"``, ``"memory_support"``,
    ``"memory_conflict"`` (see ``MemoryObservation``), each with a leading
    ``num_envs`` axis. For the same seeds and actions every entry equals what
    ``SyncVectorEnv`` of ``MemoryObservation(gym.make("TEPA/RegimeDrift-v0", ...),
    memory)`` returns, at every step, autoresets included: a sub-environment's
    memory is emptied when it resets (its autoreset step, or a ``reset`` that
    selects it through ``options["reset_mask"]``), and a sub-environment whose
    episode just ended shows an empty view (its ``info["key"]`` is ``""``).

    The evidence of a step is read from the vector env's public outputs: the key
    is the one the previous observation presented, the value the action, the
    outcome ``info["success"]`` and the time the sub-environment's step count. So
    ``key_noise`` must be 0 (the noisy key a step files its evidence under is not
    among those outputs), and the vector env must autoreset on the next step
    (``AutoresetMode.NEXT_STEP``, the native env's mode).

    Batched memories (:data:`BATCHED_MEMORIES`), each with the same arguments as
    the Python method:

    * ``"no-memory"``: shows nothing;
    * ``"lww"``: last write wins (``LastWriteWins``);
    * ``"append-only"``: ``AppendOnly`` with ``retrieval="key"`` (any ``top_k``);
    * ``"tepa"``, ``"tepa-norev"``: TEPA with the ``"v0"`` preset's choices and
      any thresholds and prior (``alpha``, ``beta``, ``theta_rev``, ``n_min``,
      ``theta_rec``, ``n_rec`` up to :data:`MAX_WINDOW`, ``theta_pro``,
      ``theta_prop``, ``theta_prop_fresh``, ``top_k``, ``revocation``). Per
      sub-environment, key and value the arrays hold the lifecycle state
      (none, hypothesis, active), support, conflict, the recent-outcome window
      (bits and length), creation and update times and the candidate's supports.

    A configuration that cannot be batched (another method, a memory object, the
    ``"paper"`` preset or any choice other than v0's) is refused with a
    ``ValueError`` naming it, before anything else happens.

    Args:
        env: a :class:`RegimeDriftVectorEnv` (e.g. ``gym.make_vec("TEPA/RegimeDrift-v0",
            num_envs=256)``), possibly inside vector wrappers that keep its
            observation space.
        memory: one of :data:`BATCHED_MEMORIES`.
        memory_kwargs: the method's arguments.
        count_cap: as in ``MemoryObservation``.
    """

    def __init__(self, env: VectorEnv, memory: str = "tepa", memory_kwargs: dict[str, Any] | None = None,
                 count_cap: int = 1000) -> None:
        if not isinstance(env, VectorEnv):
            raise TypeError(f"env must be a gymnasium VectorEnv, got {type(env).__name__}")
        native = env.unwrapped
        if not isinstance(native, RegimeDriftVectorEnv):
            raise ValueError("MemoryObservationV batches memories for RegimeDriftVectorEnv only "
                             f"(gym.make_vec('TEPA/RegimeDrift-v0', ...)), got {type(native).__name__}; "
                             "wrap other environments' sub-environments in MemoryObservation instead")
        if env.single_observation_space != native.single_observation_space:
            raise ValueError("MemoryObservationV reads the native observations: a wrapper below it must not "
                             "change the observation space")
        if env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP) != AutoresetMode.NEXT_STEP:
            raise ValueError("MemoryObservationV needs autoreset_mode NEXT_STEP (the native env's)")
        key_noise = _key_noise(env)
        if key_noise != 0:
            raise ValueError(f"MemoryObservationV needs key_noise=0, got {key_noise}: a noisy step files its "
                             "evidence under a key the vector env does not report; use SyncVectorEnv of "
                             "MemoryObservation for key noise")
        check_positive_int("count_cap", count_cap)
        super().__init__(env)
        observations, actions = native.single_observation_space, native.single_action_space
        assert isinstance(observations, gym.spaces.MultiDiscrete) and isinstance(actions, gym.spaces.Discrete)
        n_keys, n_tools_plus_one, _ = (int(n) for n in observations.nvec)
        self.n_actions = int(actions.n)
        self.count_cap = count_cap
        self._memory = make_batched_memory(memory, memory_kwargs or {}, env.num_envs, n_keys, self.n_actions)
        self.memory_name = memory
        single = gym.spaces.Dict({"obs": native.single_observation_space, **memory_spaces(self.n_actions)})
        self.single_observation_space = single
        self.observation_space = batch_space(single, env.num_envs)
        # scaled_count of every count up to the cap, computed by scaled_count itself
        self._scaled = np.concatenate([scaled_count(c, count_cap) for c in range(count_cap + 1)])
        n = env.num_envs
        self._action_ids = np.arange(self.n_actions)
        self._entries = tuple(single.spaces)
        self._keys = np.zeros(n, dtype=np.int64)  # the key each sub-environment now presents
        self._t = np.zeros(n, dtype=np.int64)  # its task index (the time of its next evidence)
        self._ended = np.zeros(n, dtype=bool)  # its episode ended: it autoresets on the next step

    # -------------------------------------------------------------- gymnasium
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        # a vector env takes a seed per sub-environment (SyncVectorEnv.reset's own annotation);
        # VectorWrapper.reset's annotation says int | None only
        observations, info = self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]
        mask = np.ones(self.num_envs, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"], dtype=bool)
        self._memory.clear(mask)
        self._t[mask] = 0
        self._ended[mask] = False
        self._keys = observations[:, 0].astype(np.int64)
        # a sub-environment left out of reset_mask whose episode ended still shows an empty view
        return self._observe(observations, self._ended.copy()), info

    def step(self, actions: Any) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        # The vector env validates the actions and raises before any memory changes.
        observations, rewards, terminations, truncations, info = self.env.step(actions)
        resetting = self._ended
        stepping = ~resetting
        if resetting.any():
            self._memory.clear(resetting)
        rows = np.flatnonzero(stepping)
        if rows.size:
            actions = np.asarray(actions, dtype=np.int64)
            success = np.asarray(info["success"], dtype=bool)
            self._memory.observe(rows, self._keys[rows], actions[rows], success[rows], self._t[rows])
        self._t = np.where(stepping, self._t + 1, 0)
        self._ended = np.logical_or(terminations, truncations)
        self._keys = observations[:, 0].astype(np.int64)
        return self._observe(observations, terminations), rewards, terminations, truncations, info

    # ---------------------------------------------------------------- helpers
    def _observe(self, observations: np.ndarray, hidden: np.ndarray) -> dict[str, np.ndarray]:
        """The batched observation: every sub-environment's view of the key it now presents
        (an empty view where ``hidden``: its episode ended and no task is presented)."""
        found, value, support, conflict = self._memory.view(self._keys)
        found &= ~hidden
        one_hot = ((self._action_ids == value[:, None]) & found[:, None]).astype(np.float32)
        support = np.where(found, support, 0)
        conflict = np.where(found, conflict, 0)
        # Record.validity, in float64 as Python computes it, then float32 as MemoryObservation stores it
        validity = np.where(found, (support + 1.0) / ((support + conflict) + 2.0), 0.0).astype(np.float32)
        out = {
            "obs": observations,
            "memory_value": one_hot,
            "memory_validity": validity[:, None],
            "memory_support": self._scaled.take(np.minimum(support, self.count_cap))[:, None],
            "memory_conflict": self._scaled.take(np.minimum(conflict, self.count_cap))[:, None],
        }
        return {name: out[name] for name in self._entries}


def _key_noise(env: VectorEnv) -> float:
    """The vector env's ``key_noise`` (its construction arguments; 0 when it was left out)."""
    template = getattr(env.unwrapped, "_template", None)
    if template is not None and hasattr(template, "key_noise"):
        return float(template.key_noise)
    spec = getattr(env, "spec", None)
    return float((spec.kwargs if spec is not None else {}).get("key_noise", 0.0))


# --------------------------------------------------------------------------- memories
class BatchedMemory:
    """Memories of ``num_envs`` sub-environments over ``n_keys`` keys and ``n_values`` values (actions)."""

    def __init__(self, num_envs: int, n_keys: int, n_values: int) -> None:
        self.num_envs, self.n_keys, self.n_values = num_envs, n_keys, n_values
        self._all = np.arange(num_envs)

    def clear(self, rows: np.ndarray) -> None:
        """Empty the memories of the sub-environments selected by the bool mask ``rows``."""

    def observe(self, rows: np.ndarray, keys: np.ndarray, values: np.ndarray, success: np.ndarray,
                t: np.ndarray) -> None:
        """One evidence for each sub-environment in ``rows`` (indices): ``(keys, values, success, t)``."""

    def view(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For every sub-environment, the record ``MemoryObservation`` would show for ``keys[i]``:
        ``(found, value, support, conflict)``; the last three are unused where ``found`` is False."""
        zeros = np.zeros(self.num_envs, dtype=np.int64)
        return np.zeros(self.num_envs, dtype=bool), zeros, zeros, zeros


class BatchedLWW(BatchedMemory):
    """:class:`~tepa_envs.agents.memories.baselines.LastWriteWins`: per sub-environment and key,
    the current value (-1: none), its support and the key's replacements."""

    def __init__(self, num_envs: int, n_keys: int, n_values: int) -> None:
        super().__init__(num_envs, n_keys, n_values)
        self._value = np.full(num_envs * n_keys, -1, dtype=np.int64)  # entry (env, key) at env * n_keys + key
        self._support = np.zeros(num_envs * n_keys, dtype=np.int64)
        self._replacements = np.zeros(num_envs * n_keys, dtype=np.int64)

    def clear(self, rows: np.ndarray) -> None:
        for array, empty in ((self._value, -1), (self._support, 0), (self._replacements, 0)):
            array.reshape(self.num_envs, self.n_keys)[rows] = empty

    def observe(self, rows, keys, values, success, t) -> None:
        entry = (rows * self.n_keys + keys)[success]  # a failed use asserts nothing
        values = values[success]
        current = self._value.take(entry)
        same = current == values
        self._support[entry] = np.where(same, self._support.take(entry) + 1, 1)
        self._replacements[entry] += ~same & (current >= 0)
        self._value[entry] = values

    def view(self, keys):
        entry = self._all * self.n_keys + keys
        value = self._value.take(entry)
        return value >= 0, value, self._support.take(entry), self._replacements.take(entry)


class BatchedAppendOnly(BatchedMemory):
    """:class:`~tepa_envs.agents.memories.baselines.AppendOnly` (``retrieval="key"``): per
    sub-environment, key and value, the support (0: never asserted) and the last update time."""

    def __init__(self, num_envs: int, n_keys: int, n_values: int) -> None:
        super().__init__(num_envs, n_keys, n_values)
        self._support = np.zeros(num_envs * n_keys * n_values, dtype=np.int64)
        self._updated = np.zeros(num_envs * n_keys * n_values, dtype=np.int64)

    def clear(self, rows: np.ndarray) -> None:
        for array in (self._support, self._updated):
            array.reshape(self.num_envs, -1)[rows] = 0

    def observe(self, rows, keys, values, success, t) -> None:
        slot = ((rows * self.n_keys + keys) * self.n_values + values)[success]
        self._support[slot] += 1
        self._updated[slot] = t[success]

    def view(self, keys):
        slots = _slots(self._all * self.n_keys + keys, self.n_values)
        support, updated = self._support.take(slots), self._updated.take(slots)
        present = support > 0
        # AppendOnly's ranking: most supported, then most recently updated (a key's values never
        # share an update time); support and time are below 2**31, so one int64 orders both
        top = np.where(present, (support << 32) | updated, -1).argmax(axis=1)
        best = top + slots[:, 0]
        return (_row_any(present), top, self._support.take(best),
                np.maximum(_row_count(present) - 1, 0))


# TEPA's fields per (sub-environment, key, value), one flat int64 array each (rows of a field):
# slot (env, key, value) at (env * n_keys + key) * n_values + value.
_FIELDS = 8
_STATE, _SUPPORT, _CONFLICT, _BITS, _COUNT, _CREATED, _UPDATED, _CANDIDATE = range(_FIELDS)
_NONE, _HYPOTHESIS, _ACTIVE = 0, 1, 2
_MAX_TIME = 1 << 31
"""Times (a sub-environment's step count) must stay below this: retrieval packs two in one int64."""


class BatchedTEPA(BatchedMemory):
    """:class:`~tepa_envs.agents.memories.tepa.TEPA` with the ``"v0"`` preset's choices.

    Per sub-environment, key and value: the state of the value's live precedent
    (none, hypothesis, active; a revoked precedent leaves the slot, as it leaves
    TEPA's live list, and a later proposal of the value is a new precedent), its
    support and conflict, its recent-outcome window (bits, newest lowest, and
    length), creation and update times, and the value's candidate supports; and,
    as a float64 array, the precedent's posterior (its retrieval score).
    """

    def __init__(self, num_envs: int, n_keys: int, n_values: int, tepa: TEPA) -> None:
        super().__init__(num_envs, n_keys, n_values)
        self.alpha, self.beta = tepa.alpha, tepa.beta
        self.theta_rev, self.theta_rec, self.theta_pro = tepa.theta_rev, tepa.theta_rec, tepa.theta_pro
        self.n_min, self.n_rec = tepa.n_min, tepa.n_rec
        self.theta_prop, self.theta_prop_fresh = tepa.theta_prop, tepa.theta_prop_fresh
        self.revocation = tepa.revocation
        self._mask = (1 << self.n_rec) - 1
        self._fields = np.zeros((_FIELDS, num_envs * n_keys * n_values), dtype=np.int64)
        self._score = np.zeros(num_envs * n_keys * n_values, dtype=np.float64)
        self._value_ids = np.arange(n_values)
        self._first_slots = self._all * n_keys * n_values  # + key * n_values: a row's first slot

    def clear(self, rows: np.ndarray) -> None:
        self._fields.reshape(_FIELDS, self.num_envs, -1)[:, rows] = 0
        self._score.reshape(self.num_envs, -1)[rows] = 0.0

    def _posterior(self, support: np.ndarray, conflict: np.ndarray) -> np.ndarray:
        # TEPA.validity, operation for operation: (s + alpha) / (s + f + alpha + beta)
        return (support + self.alpha) / ((support + conflict) + self.alpha + self.beta)

    def observe(self, rows, keys, values, success, t) -> None:
        if t.size and t.max() >= _MAX_TIME:
            raise ValueError(f"MemoryObservationV supports episodes of fewer than {_MAX_TIME} steps")
        slots = _slots(rows * self.n_keys + keys, self.n_values)  # (m, n_values): each evidence's key
        fields = self._fields
        state, support, conflict, bits, count, created, updated, candidate = (
            fields[f].take(slots) for f in range(_FIELDS))
        own = self._value_ids == values[:, None]  # the evidence's value
        worked = success[:, None]
        t_column = t[:, None]
        live = state > _NONE
        # A failed use conflicts with the value's own live precedent, a success with every other
        # live one, and a success supports the own one (never revoked in that step).
        conflicted = live & (own ^ worked)
        supported = live & own & worked
        conflict += conflicted
        support += supported
        updated = np.where(live & (own | worked), t_column, updated)
        # The own precedent's window takes the outcome (before the revocation rules read it).
        pushed = live & own
        bits = np.where(pushed, ((bits << 1) | worked) & self._mask, bits)
        count = np.where(pushed, np.minimum(count + 1, self.n_rec), count)
        score = self._posterior(support, conflict)
        if self.revocation:
            with np.errstate(divide="ignore", invalid="ignore"):
                rate = _popcount(bits) / count
            revoked = conflicted & (((support + conflict >= self.n_min) & (score < self.theta_rev))
                                    | ((count >= self.n_rec) & (rate < self.theta_rec)))
            state = np.where(revoked, _NONE, state)
        # A value without a live precedent: a failed use discards its candidate, a success counts
        # for it, proposed at theta_prop supports when the key has another live precedent, at
        # theta_prop_fresh when it has none.
        unproposed = own & ~live
        counted = unproposed & worked
        candidate = np.where(unproposed & ~worked, 0, candidate + counted)
        needed = np.where(_row_any(state > _NONE), self.theta_prop, self.theta_prop_fresh)
        proposed = counted & (candidate >= needed[:, None])
        if proposed.any():
            state = np.where(proposed, _HYPOTHESIS, state)
            support = np.where(proposed, candidate, support)
            conflict = np.where(proposed, 0, conflict)
            bits = np.where(proposed, 1, bits)
            count = np.where(proposed, 1, count)
            created = np.where(proposed, t_column, created)
            updated = np.where(proposed, t_column, updated)
            candidate = np.where(proposed, 0, candidate)
            score = self._posterior(support, conflict)
        # A supported or proposed hypothesis is promoted once its posterior reaches theta_pro.
        hypotheses = (supported | proposed) & (state == _HYPOTHESIS)
        if hypotheses.any():
            state = np.where(hypotheses & (score >= self.theta_pro), _ACTIVE, state)
        for f, values_f in enumerate((state, support, conflict, bits, count, created, updated, candidate)):
            fields[f][slots] = values_f
        self._score[slots] = score

    def view(self, keys):
        first = self._first_slots + keys * self.n_values
        slots = first[:, None] + self._value_ids
        fields = self._fields
        active = fields[_STATE].take(slots) == _ACTIVE
        # TEPA's retrieval order: highest posterior, then most recently updated, then oldest.
        score = np.where(active, self._score.take(slots), -np.inf)
        tied = active & (score == score.take(score.argmax(axis=1) + self._all * self.n_values)[:, None])
        order = (fields[_UPDATED].take(slots) << 32) - fields[_CREATED].take(slots)
        top = np.where(tied, order, np.iinfo(np.int64).min).argmax(axis=1)
        best = first + top
        return _row_any(active), top, fields[_SUPPORT].take(best), fields[_CONFLICT].take(best)


def _slots(entries: np.ndarray, n_values: int) -> np.ndarray:
    """The flat slots of every value of each (sub-environment, key) entry: shape ``(len(entries), n_values)``."""
    return (entries * n_values)[:, None] + np.arange(n_values)


def _row_any(mask: np.ndarray) -> np.ndarray:
    """``mask.any(axis=1)``, faster for the few columns (values) of these memories."""
    if mask.shape[1] > 8:
        return np.asarray(mask.any(axis=1))  # an array already (numpy's stubs allow a scalar)
    out = mask[:, 0].copy()
    for column in range(1, mask.shape[1]):
        out |= mask[:, column]
    return out


def _row_count(mask: np.ndarray) -> np.ndarray:
    """``mask.sum(axis=1)``, faster for a few columns."""
    if mask.shape[1] > 8:
        return mask.sum(axis=1)
    out = mask[:, 0].astype(np.int64)
    for column in range(1, mask.shape[1]):
        out += mask[:, column]
    return out


def _popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    count = np.zeros_like(x)
    for shift in range(MAX_WINDOW + 1):
        count += (x >> shift) & 1
    return count


_V0 = PRESETS["v0"]


def make_batched_memory(memory: object, kwargs: dict[str, Any], num_envs: int, n_keys: int,
                        n_values: int) -> BatchedMemory:
    """The batched form of ``memory`` (a name in :data:`BATCHED_MEMORIES`), or ``ValueError`` saying why not."""
    if not isinstance(memory, str) or memory not in BATCHED_MEMORIES:
        shown = memory if isinstance(memory, str) else type(memory).__name__
        raise ValueError(f"MemoryObservationV batches {', '.join(BATCHED_MEMORIES)}, not {shown!r}; "
                         "wrap the sub-environments in MemoryObservation for any other memory")
    if not isinstance(kwargs, dict):
        raise TypeError(f"memory_kwargs must be a dict or None, got {type(kwargs).__name__}")
    if memory == "no-memory":
        if kwargs:
            raise ValueError(f"no-memory takes no arguments, got {sorted(kwargs)}")
        return BatchedMemory(num_envs, n_keys, n_values)
    if memory == "lww":
        if kwargs:
            raise ValueError(f"lww takes no arguments, got {sorted(kwargs)}")
        return BatchedLWW(num_envs, n_keys, n_values)
    if memory == "append-only":
        reference = AppendOnly(**kwargs)  # validates the arguments as the Python method does
        if reference.retrieval != "key":
            raise ValueError("MemoryObservationV batches append-only with retrieval='key' only, "
                             f"got retrieval={reference.retrieval!r}")
        return BatchedAppendOnly(num_envs, n_keys, n_values)
    if memory == "tepa-norev" and "revocation" in kwargs:
        raise TypeError("tepa-norev does not take 'revocation'; it never revokes")
    tepa = TEPA(**({**kwargs, "revocation": False} if memory == "tepa-norev" else kwargs))
    if tepa.n_rec > MAX_WINDOW:
        raise ValueError(f"MemoryObservationV batches TEPA windows up to n_rec={MAX_WINDOW}, got {tepa.n_rec}")
    different = {name: value for name, value in tepa.choices.as_dict().items()
                 if name != "theta_prop_fresh" and value != _V0[name]}
    if different:
        raise ValueError(f"MemoryObservationV batches TEPA with the 'v0' preset's choices only (any "
                         f"theta_prop_fresh), got {different} (preset {tepa.preset!r}); wrap the "
                         "sub-environments in MemoryObservation for other choices")
    return BatchedTEPA(num_envs, n_keys, n_values, tepa)
