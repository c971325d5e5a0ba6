"""Diagnostic bounds: memories told the ground truth through the oracle hooks.

Both are *oracle* methods: they read what no other method may, the environment's
``info["oracle"]`` (through :meth:`~tepa_envs.agents.memories.protocol.MemoryHooks.on_oracle`
and :meth:`~tepa_envs.agents.memories.protocol.MemoryHooks.on_phase_boundary`, which
the agent loop calls before the memory is asked for the presented task). They are
never "best non-oracle" in a table; they say what a memory could give a reader.

* ``oracle-view`` (:class:`OracleView`) shows the presented key's current true value
  first (then the key's other seen values): the ceiling for any memory under a given
  reader (no memory can show anything better first; a reader that follows it
  perfectly never fails).
* ``oracle-reset`` (:class:`OracleReset`) is append-only memory whose key is cleared
  when that key's true value changes (``scope="key"``, the default): it keeps every
  value the evidence asserted since the change, so it is what append-only memory
  would give if it knew when to forget, key by key. ``scope="global"`` is the older
  reading, clearing every key at each global phase boundary: on multi-key scenarios
  where keys change at different times (Async, Poisson, Gradual, Zipf, FileOps) it
  wipes keys that did not change and shows nothing after each boundary, so simple
  memories can beat it there: it is **not** a bound on those scenarios.

Neither bounds what every reader achieves with every memory: a reader that does not
follow what it is shown can do better with a memory that shows a wrong value it
ignores. ``oracle-view`` bounds it for the simulated readers the project ships
(``tests/test_bounds.py``).
"""

from __future__ import annotations

from tepa_envs.core import Evidence, LifecycleState, Record, check_choice

from tepa_envs.agents.memories.baselines import AppendOnly
from tepa_envs.agents.memories.protocol import MemoryBase

SCOPES: tuple[str, ...] = ("key", "global")


class OracleReset(MemoryBase):
    """Diagnostic bound: a base memory cleared when the truth changes.

    Only oracle methods are told the truth (:meth:`on_oracle` and
    :meth:`on_phase_boundary`). Evidence reaches a key only after it is presented,
    so clearing a key when it is presented with a new true value is clearing it at
    the change itself.

    Args:
        base: the memory cleared (default: append-only).
        scope: ``"key"`` (default): a key's evidence is forgotten when that key's true
            value changes; the base is rebuilt from the other keys' evidence, in order.
            ``"global"``: the whole base is cleared at every true phase boundary (not
            a bound where keys change at different times: it also forgets keys that
            did not change). A loop that never calls :meth:`on_oracle` in an episode
            (one that only reports phase boundaries, such as the PettingZoo
            shared-memory wrapper today) gets the global reading with either scope.
    """

    name = "oracle-reset"
    _log: list[Evidence]
    _truth: dict[str, str]

    def __init__(self, *, base: MemoryBase | None = None, scope: str = "key") -> None:
        super().__init__()
        if base is not None and not isinstance(base, MemoryBase):
            raise TypeError(f"base must be a MemoryBase, got {type(base).__name__}")
        self.scope = check_choice("scope", scope, SCOPES)
        self.base = base if base is not None else AppendOnly()
        self._reset()

    def on_phase_boundary(self) -> None:
        self.boundaries_seen += 1
        if self.scope == "global" or not self._truth:  # not told per-key truths: the global reading
            self.base.reset()
            self._log.clear()

    def on_oracle(self, key: str, correct: str) -> None:
        if self.scope != "key":
            return
        last = self._truth.get(key)
        self._truth[key] = correct
        if last is None or last == correct:
            return
        self.keys_cleared += 1
        if not any(e.key == key for e in self._log):
            return
        self._log = [e for e in self._log if e.key != key]
        self.base.reset()
        for evidence in self._log:
            self.base.observe(evidence)

    def _observe(self, evidence: Evidence) -> None:
        self.base.observe(evidence)
        self._log.append(evidence)

    def _retrieve(self, key: str, context: str) -> list[Record]:
        return self.base.retrieve(key, context)

    def _reset(self) -> None:
        self.base.reset()
        self.boundaries_seen = 0
        self.keys_cleared = 0
        self._log = []
        self._truth = {}


class OracleView(MemoryBase):
    """Diagnostic ceiling: shows the presented key's current true value first.

    :meth:`on_oracle` tells it the true value of the key now presented, which it returns
    as the first record (``ACTIVE``, score 1). With ``alternatives=True`` (default) the
    key's other values seen in the evidence follow it (``REVOKED``, score 0): the first
    value is the truth either way, and a reader that follows the first of several listed
    values more readily than a lone one (the ``smollm2-135m`` profile: ``follow_conflict``
    0.55 against ``follow_prob`` 0.34) follows it more, so it stays the ceiling for list-
    showing memories too. ``alternatives=False``: the lone true value. A key it was never
    told about shows nothing.
    """

    name = "oracle-view"

    def __init__(self, *, alternatives: bool = True) -> None:
        super().__init__()
        if not isinstance(alternatives, bool):
            raise TypeError(f"alternatives must be a bool, got {type(alternatives).__name__}")
        self.alternatives = alternatives
        self._reset()

    def on_oracle(self, key: str, correct: str) -> None:
        known = self._truth.get(key)
        if known is None or known[0] != correct:
            self._truth[key] = (correct, self._last_t)

    def _observe(self, evidence: Evidence) -> None:
        if self.alternatives:
            self._seen.setdefault(evidence.key, {})[evidence.value] = evidence.t

    def _retrieve(self, key: str, context: str) -> list[Record]:
        known = self._truth.get(key)
        if known is None or not known[0]:
            return []
        value, since = known
        others = [(v, t) for v, t in self._seen.get(key, {}).items() if v != value]
        records = [Record(key, value, 1, len(others), LifecycleState.ACTIVE, since, since, 1.0)]
        records += [Record(key, v, 0, len(others), LifecycleState.REVOKED, t, t, 0.0)
                    for v, t in sorted(others, key=lambda item: -item[1])]
        return records

    def _reset(self) -> None:
        self._truth: dict[str, tuple[str, int]] = {}
        self._seen: dict[str, dict[str, int]] = {}


__all__ = ["SCOPES", "OracleReset", "OracleView"]
