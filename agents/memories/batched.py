"""Memories batched over the sub-environments of a vector environment: numpy arrays
indexed by (sub-environment, key, value), one vectorised update per step for all of
them. Each is bound to the Python method it batches (:mod:`~tepa_envs.agents.memories.baselines`,
:mod:`~tepa_envs.agents.memories.tepa`) by the equivalence tests of
``tests/wrappers/test_vector_memory.py``; :class:`~tepa_envs.wrappers.MemoryObservationV`
is the adapter that feeds them a vector environment's steps and shows their views.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tepa_envs.agents.memories.baselines import AppendOnly
from tepa_envs.agents.memories.tepa import TEPA
from tepa_envs.agents.memories.tepa_choices import PRESETS

BATCHED_MEMORIES: tuple[str, ...] = ("no-memory", "lww", "append-only", "tepa", "tepa-norev")
"""The memories batched here (names as in the registry)."""

MAX_WINDOW = 62
"""Largest TEPA ``n_rec`` batched: a recent-outcome window is the low bits of an int64."""


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


def _refuse_notify_option(memory: str, action: str) -> None:
    """The batched memories never hear a change notification: a memory told to act on one is refused."""
    if action != "ignore":
        raise ValueError(f"the batched {memory} does not act on change notifications (on_notify={action!r}); "
                         "wrap the sub-environments in MemoryObservation for it")


def make_batched_memory(memory: object, kwargs: dict[str, Any], num_envs: int, n_keys: int,
                        n_values: int) -> BatchedMemory:
    """The batched form of ``memory`` (a name in :data:`BATCHED_MEMORIES`), or ``ValueError`` saying why not."""
    if not isinstance(memory, str) or memory not in BATCHED_MEMORIES:
        shown = memory if isinstance(memory, str) else type(memory).__name__
        raise ValueError(f"the batched memories are {', '.join(BATCHED_MEMORIES)}, not {shown!r}; "
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
        _refuse_notify_option(memory, reference.on_notify_action)
        if reference.retrieval != "key":
            raise ValueError("MemoryObservationV batches append-only with retrieval='key' only, "
                             f"got retrieval={reference.retrieval!r}")
        return BatchedAppendOnly(num_envs, n_keys, n_values)
    if memory == "tepa-norev" and "revocation" in kwargs:
        raise TypeError("tepa-norev does not take 'revocation'; it never revokes")
    tepa = TEPA(**({**kwargs, "revocation": False} if memory == "tepa-norev" else kwargs))
    _refuse_notify_option(memory, tepa.on_notify_action)
    if tepa.n_rec > MAX_WINDOW:
        raise ValueError(f"MemoryObservationV batches TEPA windows up to n_rec={MAX_WINDOW}, got {tepa.n_rec}")
    different = {name: value for name, value in tepa.choices.as_dict().items()
                 if name != "theta_prop_fresh" and value != _V0[name]}
    if different:
        raise ValueError(f"MemoryObservationV batches TEPA with the 'v0' preset's choices only (any "
                         f"theta_prop_fresh), got {different} (preset {tepa.preset!r}); wrap the "
                         "sub-environments in MemoryObservation for other choices")
    return BatchedTEPA(num_envs, n_keys, n_values, tepa)


__all__ = ["BATCHED_MEMORIES", "MAX_WINDOW", "BatchedAppendOnly", "BatchedLWW", "BatchedMemory", "BatchedTEPA",
           "make_batched_memory"]
