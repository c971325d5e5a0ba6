"""A native, numpy-batched vector environment for ``TEPA/RegimeDrift-v0`` and its scenarios.

``gym.make_vec("TEPA/RegimeDrift-v0", num_envs=256)`` builds
:class:`RegimeDriftVectorEnv` (through the spec's ``vector_entry_point``), as does
every registered scenario (``TEPA/RegimeDrift-Noisy-v0``, ...) and any ``schedule``.
Each sub-environment draws its world with the same seeding and the same
:func:`~tepa_envs.regime_drift.env.draw_world` call as :class:`RegimeDriftEnv`, so
observations, rewards, terminations, truncations and the batched info keys equal
``SyncVectorEnv``'s for the same seeds and actions; a step is a handful of
numpy operations over all sub-environments.

Autoreset follows ``AutoresetMode.NEXT_STEP`` (as ``SyncVectorEnv``): the step
after a termination resets that sub-environment, ignores its action, and returns
its first observation with reward 0.

Batched info keys (each with its ``_name`` mask, built like ``SyncVectorEnv``),
with ``info_schema="fixed"`` (the default): every key of the fixed schema
(:mod:`~tepa_envs.core.step_info`) at reset and at every step, the terminal step
included: ``key``, ``t``, ``scored``, ``success``, ``evidence`` (``count``,
``key``, ``value``, ``t``, ``outcome``, ``source``), ``oracle`` (``phase``,
``phase_name``, ``phase_changed``, ``correct``; :data:`~tepa_envs.core.step_info.NO_ORACLE`
at a terminal step) and ``forfeited``. With ``info_schema="rich"``: ``key``,
``t``, ``success`` (only for sub-environments that stepped) and ``oracle``
(absent at a sub-environment's terminal step). Not batched in either, for speed:
the free texts ``context`` and ``message`` (and the rich schema's evidence list);
use ``SyncVectorEnv`` when an agent needs them.

``notify`` (:mod:`tepa_envs.core.notify`) and ``observe_truth`` (the ``*-MDP-v0``
twins) work as on :class:`RegimeDriftEnv`: the observation gains the flag column
and/or the correct tool's index column, and with ``notify != "none"`` every batched
info (either schema) has ``notified`` with its ``_notified`` mask. The flags of an
episode are computed at the sub-environment's reset by
:func:`~tepa_envs.core.notify.notify_flags` over its drawn world, from the detector
generator spawned from its seeded generator, so they equal ``SyncVectorEnv``'s.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from tepa_envs.core import check_int
from tepa_envs.core.notify import notifier_rng, notify_flags
from tepa_envs.core.step_info import batched_fixed_step_info, batched_step_info, check_info_schema
from tepa_envs.error import ResetNeeded
from tepa_envs.regime_drift.env import RegimeDriftEnv, draw_world

MAX_NUM_ENVS = 1 << 16
"""Largest ``num_envs`` (65,536): far beyond what one process steps usefully."""
MAX_BATCH_CELLS = 2 * 10**7
"""Largest number of 8-byte cells the world arrays may hold, ``num_envs * (T + 1 + S * n_keys)``
for ``T`` tasks in ``S`` phases, plus ``num_envs * (T + 1)`` for a schedule with changes inside
a phase and as much again for noisy outcomes (160 MB; at the paper's schedule
``num_envs * (sum(phase_lengths) + 1 + 4 * n_keys)``): checked in the constructor, before
anything is allocated."""


class RegimeDriftVectorEnv(VectorEnv):
    """``num_envs`` RegimeDrift episodes stepped together.

    ## Arguments

    * ``num_envs``: number of sub-environments, from 1 to ``MAX_NUM_ENVS`` (65,536),
      and small enough that ``num_envs * (sum(phase_lengths) + 1 + 4 * n_keys)``,
      the int64 cells of the batched world, is at most ``MAX_BATCH_CELLS``
      (2 * 10**7, 160 MB; at the defaults any ``num_envs`` up to 65,536 fits;
      other schedules count as ``MAX_BATCH_CELLS`` says).
    * ``**kwargs``: the arguments of :class:`~tepa_envs.regime_drift.env.RegimeDriftEnv`
      (``phase_lengths``, ``n_tools``, ``n_keys``, ``light_drift_fraction``,
      ``partial_return_fraction``, ``key_noise``, ``schedule``, ``info_schema``), validated
      by it with its bounds; ``info_schema`` picks the batched keys (module docstring).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, **kwargs: Any) -> None:
        num_envs = check_int("num_envs", num_envs, low=1, high=MAX_NUM_ENVS)
        if kwargs.get("render_mode") is not None:
            raise ValueError("RegimeDriftVectorEnv does not render; use render_mode=None")
        kwargs.pop("render_mode", None)
        self._template = RegimeDriftEnv(**kwargs)
        template = self._template
        self.info_schema = check_info_schema(template.info_schema)
        drift = self._drift = template.drift
        total, n_phases = drift.total, len(drift.segments)
        cells = num_envs * ((total + 1) * (1 + drift.timed + drift.noisy) + n_phases * template.n_keys)
        if cells > MAX_BATCH_CELLS:
            raise ValueError(f"num_envs={num_envs} with sum(phase_lengths)={total} and "
                             f"n_keys={template.n_keys} needs {cells:,} world cells, over MAX_BATCH_CELLS="
                             f"{MAX_BATCH_CELLS:,}; use fewer sub-environments or shorter phases")
        self.num_envs = num_envs
        self.render_mode = None
        self.single_observation_space = template.observation_space
        self.single_action_space = template.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

        self._n_tools = template.n_tools
        self._total = total
        self._phase_of_t = np.append(template.schedule.phase_array(), n_phases - 1)
        self._phase_changed_at_t = np.array([template.schedule.starts_phase(t) for t in range(self._total + 1)])
        self._phase_names = np.array(template.schedule.names + ("",), dtype=object)
        self._key_names = np.array(template.keys + ("",), dtype=object)
        self._tool_names = np.array(template.values, dtype=object)
        self._rows = np.arange(num_envs)

        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        self._regime = np.zeros((num_envs, n_phases, template.n_keys), dtype=np.int64)
        # One extra column holds key index 0 for the observation after the last task.
        self._task_keys = np.zeros((num_envs, self._total + 1), dtype=np.int64)
        # Changes inside a phase: the correct tool of every task; noisy outcomes: every task's draw.
        self._correct = np.zeros((num_envs, self._total + 1), dtype=np.int64) if drift.timed else None
        self._outcome_draw = np.zeros((num_envs, self._total + 1)) if drift.noisy else None
        # The fixed schema's evidence key of every task, when key noise can file it under another key.
        self._evidence_keys = (np.empty((num_envs, self._total + 1), dtype=object)
                               if self.info_schema == "fixed" and template.key_noise > 0 else None)
        self._notification = template.notification
        self._observe_truth = template.observe_truth
        # Every task's change flag (one extra column, False, for the observation after the last task).
        self._notified = (np.zeros((num_envs, self._total + 1), dtype=bool) if self._notification.enabled
                          else None)
        # the fixed schema's evidence sentinels (nothing revealed), shared: the info builder copies them
        self._no_evidence = {"count": np.zeros(num_envs, dtype=np.int64), "key": np.full(num_envs, "", dtype=object),
                             "value": np.full(num_envs, "", dtype=object), "t": np.full(num_envs, -1, dtype=np.int64),
                             "outcome": np.full(num_envs, -1, dtype=np.int64),
                             "source": np.full(num_envs, "", dtype=object)}
        self._t = np.zeros(num_envs, dtype=np.int64)
        self._previous_action = np.full(num_envs, self._n_tools, dtype=np.int64)
        self._previous_success = np.zeros(num_envs, dtype=np.int64)
        self._autoreset = np.zeros(num_envs, dtype=bool)
        self._started = False

    # ------------------------------------------------------------------ world
    @property
    def key_noise(self) -> float:
        """The sub-environments' ``key_noise`` (as given, default 0.0): the probability that a
        step's evidence is filed under a wrong key."""
        return self._template.key_noise

    def _reset_env(self, i: int, seed: int | None) -> None:
        rng = self._rngs[i]
        if seed is not None or rng is None:
            rng, _ = seeding.np_random(seed)
            self._rngs[i] = rng
        template = self._template
        world = draw_world(rng, template.keys, template.n_tools, self._drift, template.key_noise,
                           with_evidence_keys=self._evidence_keys is not None)
        if self._evidence_keys is not None:
            self._evidence_keys[i, :self._total] = world.evidence_keys
        self._regime[i] = world.regime
        self._task_keys[i, :self._total] = world.task_keys
        if self._correct is not None:
            self._correct[i, :self._total] = world.correct
        if self._outcome_draw is not None:
            self._outcome_draw[i, :self._total] = world.outcome_draw
        if self._notified is not None:
            detector = notifier_rng(rng) if self._notification.level == "detected" else None
            self._notified[i, :self._total] = notify_flags(self._notification, detector, world.task_keys.tolist(),
                                                           world.correct.tolist())
        self._t[i] = 0
        self._previous_action[i] = self._n_tools
        self._previous_success[i] = 0

    def _correct_at(self, t: np.ndarray, phase: np.ndarray) -> np.ndarray:
        """The correct tool index of each sub-environment's task ``t`` (in phase ``phase``)."""
        if self._correct is not None:
            return self._correct[self._rows, t]
        return self._regime[self._rows, phase, self._task_keys[self._rows, t]]

    def _observations(self) -> np.ndarray:
        t = self._t
        columns = [self._task_keys[self._rows, t], self._previous_action, self._previous_success]
        if self._notified is not None:
            columns.append(self._notified[self._rows, t].astype(np.int64))
        if self._observe_truth:
            columns.append(np.where(t < self._total, self._correct_at(t, self._phase_of_t[t]), self._n_tools))
        return np.stack(columns, axis=1)

    def _infos(self, rows: np.ndarray, success: np.ndarray | None, stepped: np.ndarray | None,
               evidence: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
        """Infos of the sub-environments in ``rows`` (a bool mask), as ``SyncVectorEnv`` batches them;
        ``evidence``: the fixed schema's evidence fields of the step (``None``: none revealed)."""
        t = self._t
        live = t < self._total
        key_index = np.where(live, self._task_keys[self._rows, t], len(self._key_names) - 1)
        phase = self._phase_of_t[t]
        correct = self._tool_names[self._correct_at(t, phase)]
        own: dict[str, np.ndarray] = {}
        if self._notified is not None:
            own["notified"] = self._notified[self._rows, t]
        if self.info_schema == "rich":
            infos = batched_step_info(rows, key=self._key_names[key_index], t=t, success=success, stepped=stepped,
                                      oracle_rows=rows & live, phase=phase, phase_name=self._phase_names[phase],
                                      phase_changed=self._phase_changed_at_t[t], correct=correct)
            for name, values in own.items():
                infos[name] = np.where(rows, values, False)
                infos[f"_{name}"] = rows.copy()
            return infos
        n = self.num_envs
        scored = np.zeros(n, dtype=bool) if stepped is None else stepped.copy()
        return batched_fixed_step_info(
            rows, key=self._key_names[key_index], t=t, scored=scored,
            success=np.zeros(n, dtype=bool) if success is None else success,
            evidence=self._no_evidence if evidence is None else evidence, live=live, phase=phase,
            phase_name=self._phase_names[phase], phase_changed=self._phase_changed_at_t[t], correct=correct,
            forfeited=np.zeros(n, dtype=bool), **own)

    def _step_evidence(self, stepping: np.ndarray, t: np.ndarray, actions: np.ndarray,
                       success: np.ndarray) -> dict[str, np.ndarray]:
        """The fixed schema's evidence fields: one executor outcome per sub-environment that stepped."""
        none = self._no_evidence
        keys = (self._key_names[self._task_keys[self._rows, t]] if self._evidence_keys is None
                else self._evidence_keys[self._rows, t])
        return {"count": stepping.astype(np.int64), "key": np.where(stepping, keys, none["key"]),
                "value": np.where(stepping, self._tool_names[np.where(stepping, actions, 0)], none["value"]),
                "t": np.where(stepping, t, -1), "outcome": np.where(stepping, success.astype(np.int64), -1),
                "source": np.where(stepping, "executor", none["source"]).astype(object)}

    # -------------------------------------------------------------- gymnasium
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed if isinstance(seed, int) else None)
        n = self.num_envs
        if isinstance(seed, bool):
            raise TypeError("seed must be an int, a sequence of ints (or None) or None, got bool")
        if seed is None:
            seeds: list[int | None] = [None] * n
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(f"If seeds are passed as a list the length must match num_envs={n} "
                                 f"but got length={len(seeds)}.")
        mask = np.ones(n, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = options["reset_mask"]
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
                raise TypeError(f"options['reset_mask'] must be a bool numpy array, got {mask!r}")
            if mask.shape != (n,):
                raise ValueError(f"options['reset_mask'] must have shape ({n},), got {mask.shape}")
            if not mask.any():
                raise ValueError("options['reset_mask'] must contain at least one True value")
        for i in np.flatnonzero(mask):
            self._reset_env(int(i), seeds[i])
        self._autoreset[mask] = False
        self._started = True
        return self._observations(), self._infos(mask, None, None)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if not self._started:
            raise ResetNeeded("call reset() before step()")
        actions = np.asarray(actions)
        if not np.issubdtype(actions.dtype, np.integer):
            raise TypeError(f"actions must be an int array, got dtype {actions.dtype}")
        if actions.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {actions.shape}")
        resetting = self._autoreset
        stepping = ~resetting
        bad = stepping & ((actions < 0) | (actions >= self._n_tools))
        if bad.any():
            raise ValueError(f"actions must be in [0, {self._n_tools}), got {actions[bad].tolist()}")

        for i in np.flatnonzero(resetting):
            self._reset_env(int(i), None)

        t = self._t
        correct = self._correct_at(t, self._phase_of_t[t])
        chose_correct = actions == correct
        if self._outcome_draw is not None:
            success = stepping & self._drift.succeeds(chose_correct, self._outcome_draw[self._rows, t])
        else:
            success = stepping & chose_correct
        self._previous_action = np.where(stepping, actions, self._previous_action).astype(np.int64)
        self._previous_success = np.where(stepping, success, self._previous_success).astype(np.int64)
        self._t = t + stepping
        terminations = stepping & (self._t >= self._total)
        rewards = success.astype(np.float64)
        self._autoreset = terminations.copy()
        evidence = None if self.info_schema == "rich" else self._step_evidence(stepping, t, actions, success)
        infos = self._infos(np.ones(self.num_envs, dtype=bool), success, stepping, evidence)
        return self._observations(), rewards, terminations, np.zeros(self.num_envs, dtype=bool), infos
