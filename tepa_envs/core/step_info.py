"""The evidence contract in code: the ``info`` every environment returns.

Every single-agent environment, each agent of the PettingZoo environment and
(batched) the native vector environment build their ``info`` here, so the
contract is written once. Each registered environment takes ``info_schema``
(:data:`INFO_SCHEMAS`), one of two views of the same step:

``info_schema="fixed"`` (the default): one schema for every step (:func:`fixed_step_info`).
The same keys at ``reset()``, at every step and at the terminal step, each
with a value of fixed type (and shape), a sentinel where it does not apply,
never ``None`` and never a missing key, so libraries that stack or record infos
(Minari's ``DataCollector(record_infos=True)``, Tianshou's buffers, TorchRL)
take them as they are:

========================  ========  ==============================================
key                       type      value (sentinel)
========================  ========  ==============================================
``key``                   str       conflict key of the task now presented (``""``)
``context``               str       text a language agent is shown for it (``""``)
``t``                     int       index of the task now presented
``scored``                bool      whether this step was scored (``False`` at reset)
``success``               bool      the scored step's outcome (``False`` unless scored)
``message``               str       what the executor/user/checker said (``""``)
``evidence``              dict      the step's evidence, fixed fields (below)
``oracle``                dict      ground truth of the task now presented (below)
========================  ========  ==============================================

``evidence`` = ``{"count": int, "key": str, "value": str, "t": int, "outcome": int,
"source": str}``: how many :class:`~tepa_envs.core.Evidence` the step revealed and
the first of them (``outcome`` 1 / 0 for a success / failure, -1 for an asserted
observation; sentinels ``0, "", "", -1, -1, ""`` when the step revealed none).
``oracle`` = ``{"phase": int, "phase_name": str, "phase_changed": bool, "correct": str}``
(sentinel :data:`NO_ORACLE`, ``phase = -1``, once no task is presented: the
terminal step). Environments add fixed keys of their own (documented on each:
``forfeited`` on the task streams, and ``notified`` on them when ``notify`` is
not ``"none"``, :mod:`tepa_envs.core.notify`; ``answer``, ``qa_pair_id``, ``chain`` on
FactConsolidation).

``info_schema="rich"`` (the variable view; the agent loop of
:mod:`tepa_envs.agents` reads either): the variable view below, where
``evidence`` is the list of :class:`~tepa_envs.core.Evidence` objects and a key
is present only where it applies (``"success" in info`` tells a scored step).
Whatever the schema, the step's full evidence list is also
``env.unwrapped.last_evidence`` (:func:`evidence_of` reads either view).

The rich view:

* ``key``: the conflict key of the task now presented (``""`` when none);
* ``context``: the text a language agent is shown for it;
* ``evidence``: what the last step revealed (empty after reset);
* ``t``: the index of the task now presented;
* ``success``: after a step, whether its task succeeded;
* ``oracle``: ground truth for evaluation and the oracle-reset bound only
  (``phase``, ``phase_name``, ``phase_changed``, ``correct``), present while a
  task is presented.

Environments add documented keys of their own (``message``, ``chain``, ...).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence, TypedDict

import gymnasium as gym
import numpy as np

from tepa_envs.core.checks import check_choice, check_str
from tepa_envs.core.types import Evidence

INFO_SCHEMAS = ("rich", "fixed")
"""Values of an environment's ``info_schema`` argument (see the module docstring)."""
DEFAULT_INFO_SCHEMA = "fixed"
"""The schema an environment uses unless told otherwise: ``"fixed"``, the one structure
that recorders and RL libraries stack (the agent loop reads both schemas, through
:func:`is_scored` and :func:`evidence_of`)."""
FIXED_INFO_KEYS = ("key", "context", "t", "scored", "success", "message", "evidence", "oracle")
"""The keys every ``info_schema="fixed"`` info has, in this order (environments add their own after)."""
EVIDENCE_FIELDS = ("count", "key", "value", "t", "outcome", "source")
ORACLE_FIELDS = ("phase", "phase_name", "phase_changed", "correct")


class OracleInfo(TypedDict, total=False):
    phase: int
    phase_name: str
    phase_changed: bool
    correct: str
    answers: list[str]


class StepInfo(TypedDict, total=False):
    key: str
    context: str
    evidence: list[Evidence]
    t: int
    success: bool
    oracle: OracleInfo


def oracle_info(phase: int, phase_name: str, phase_changed: bool, correct: str) -> OracleInfo:
    """The ``oracle`` entry for a presented task."""
    return {"phase": phase, "phase_name": phase_name, "phase_changed": phase_changed, "correct": correct}


def step_info(*, key: str, context: str, evidence: Sequence[Evidence], t: int, success: bool | None = None,
              oracle: OracleInfo | None = None, **extra: Any) -> StepInfo:
    """A fresh ``info``; ``success`` only after a step, ``oracle`` only while a task is presented.
    ``extra`` are an environment's own documented keys, added after the shared ones."""
    info: dict[str, Any] = {"key": key, "context": context, "evidence": list(evidence), "t": t}
    if success is not None:
        info["success"] = bool(success)
    info.update(extra)
    if oracle is not None:
        info["oracle"] = oracle
    return info  # type: ignore[return-value]


def check_info_schema(info_schema: object) -> str:
    """``"rich"`` or ``"fixed"`` (``TypeError`` for a non-str, ``ValueError`` otherwise)."""
    return check_choice("info_schema", check_str("info_schema", info_schema), INFO_SCHEMAS)


NO_ORACLE: OracleInfo = {"phase": -1, "phase_name": "", "phase_changed": False, "correct": ""}
"""The fixed schema's ``oracle`` once no task is presented (the terminal step)."""


def evidence_fields(evidence: Sequence[Evidence]) -> dict[str, Any]:
    """The fixed-shape ``evidence`` entry: the count and the first evidence's fields."""
    if not evidence:
        return {"count": 0, "key": "", "value": "", "t": -1, "outcome": -1, "source": ""}
    first = evidence[0]
    outcome = first.outcome
    return {"count": len(evidence), "key": first.key, "value": first.value, "t": int(first.t),
            "outcome": -1 if outcome is None else int(outcome), "source": first.source}


def fixed_info(key: str, context: str, t: int, success: bool | None, message: str, evidence: Sequence[Evidence],
               phase: int, phase_name: str, phase_changed: bool, correct: str) -> dict[str, Any]:
    """:func:`fixed_step_info` without its environment-specific keys, the oracle given by its
    four fields (:data:`NO_ORACLE`'s once no task is presented): the one place the fixed
    schema is built, called positionally on every step of every task stream. Each value is
    converted to its schema type (``str``, ``int``, ``bool``) unless it already has it."""
    if evidence:
        first = evidence[0]
        outcome, first_t = first.outcome, first.t
        fields = {"count": len(evidence), "key": first.key, "value": first.value,
                  "t": first_t if type(first_t) is int else int(first_t),
                  "outcome": -1 if outcome is None else 1 if outcome is True else 0 if outcome is False
                  else int(outcome),
                  "source": first.source}
    else:
        fields = {"count": 0, "key": "", "value": "", "t": -1, "outcome": -1, "source": ""}
    return {"key": key if type(key) is str else str(key),
            "context": context if type(context) is str else str(context),
            "t": t if type(t) is int else int(t), "scored": success is not None,
            "success": success if success is True or success is False else bool(success),
            "message": message if type(message) is str else str(message), "evidence": fields,
            "oracle": {"phase": phase if type(phase) is int else int(phase),
                       "phase_name": phase_name if type(phase_name) is str else str(phase_name),
                       "phase_changed": phase_changed if phase_changed is True or phase_changed is False
                       else bool(phase_changed),
                       "correct": correct if type(correct) is str else str(correct)}}


def fixed_step_info(*, key: str, context: str, evidence: Sequence[Evidence], t: int, success: bool | None = None,
                    message: str = "", oracle: OracleInfo | None = None, **extra: Any) -> dict[str, Any]:
    """A fresh ``info`` of the fixed schema (module docstring): every key always, sentinels
    where a value does not apply. ``success=None`` marks a step that was not scored (and
    reset). ``extra`` are an environment's own fixed keys, each always given, added last."""
    oracle = NO_ORACLE if oracle is None else oracle
    info = fixed_info(key, context, t, success, message, evidence, oracle["phase"], oracle["phase_name"],
                      oracle["phase_changed"], oracle["correct"])
    info.update(extra)
    return info


def is_scored(info: Mapping[str, Any]) -> bool:
    """Whether the step ``info`` reports was scored, whatever the schema: ``info["scored"]``
    (the fixed schema), else whether the rich ``info`` carries ``success``."""
    scored = info.get("scored")
    return bool(scored) if scored is not None else "success" in info


def evidence_of(info: Mapping[str, Any], env: Any = None) -> tuple[Evidence, ...]:
    """The step's evidence as :class:`~tepa_envs.core.Evidence` objects, whatever the schema:
    ``info["evidence"]`` when it is the rich list, else ``env``'s ``last_evidence``
    (``env`` is needed for a fixed-schema info with evidence; ``ValueError`` without it)."""
    evidence = info.get("evidence", ())
    if isinstance(evidence, (list, tuple)):
        return tuple(evidence)
    if not evidence or not evidence.get("count"):
        return ()
    if env is None:
        raise ValueError("a fixed-schema info carries the evidence as fields: pass the environment "
                         "to read its last_evidence")
    if isinstance(env, gym.Env):  # possibly wrapped: a wrapper may override it
        return tuple(env.get_wrapper_attr("last_evidence"))
    return tuple(env.last_evidence)


# None as np.where's fill value, as the 0-d object array numpy makes of it (numpy's stubs
# refuse a bare None there; the result is the same object array)
_NONE = np.array(None, dtype=object)


def batched_step_info(rows: np.ndarray, *, key: np.ndarray, t: np.ndarray, success: np.ndarray | None,
                      stepped: np.ndarray | None, oracle_rows: np.ndarray, phase: np.ndarray,
                      phase_name: np.ndarray, phase_changed: np.ndarray, correct: np.ndarray) -> dict[str, Any]:
    """The infos of the sub-environments in ``rows`` (a bool mask), batched as
    Gymnasium's ``SyncVectorEnv`` batches :func:`step_info` dicts: each entry an
    array with a ``_name`` mask. ``context`` and ``evidence`` are not batched."""
    infos: dict[str, Any] = {
        "key": np.where(rows, key, _NONE), "_key": rows.copy(),
        "t": np.where(rows, t, 0), "_t": rows.copy(),
    }
    if stepped is not None and success is not None and stepped.any():
        infos["success"] = np.where(stepped, success, False)
        infos["_success"] = stepped.copy()
    if oracle_rows.any():
        infos["oracle"] = {
            "phase": np.where(oracle_rows, phase, 0), "_phase": oracle_rows.copy(),
            "phase_name": np.where(oracle_rows, phase_name, _NONE), "_phase_name": oracle_rows.copy(),
            "phase_changed": np.where(oracle_rows, phase_changed, False), "_phase_changed": oracle_rows.copy(),
            "correct": np.where(oracle_rows, correct, _NONE), "_correct": oracle_rows.copy(),
        }
        infos["_oracle"] = oracle_rows.copy()
    return infos


def batched_fixed_step_info(rows: np.ndarray, *, key: np.ndarray, t: np.ndarray, scored: np.ndarray,
                            success: np.ndarray, evidence: Mapping[str, np.ndarray], live: np.ndarray,
                            phase: np.ndarray, phase_name: np.ndarray, phase_changed: np.ndarray,
                            correct: np.ndarray, **extra: np.ndarray) -> dict[str, Any]:
    """The fixed-schema infos of the sub-environments in ``rows`` (a bool mask), batched as
    Gymnasium's ``SyncVectorEnv`` batches :func:`fixed_step_info` dicts (each entry an array
    with a ``_name`` mask, a nested dict per ``evidence`` and ``oracle``; rows outside
    ``rows`` hold the defaults ``SyncVectorEnv`` fills in: 0, ``False`` or ``None``).
    ``evidence`` holds the :data:`EVIDENCE_FIELDS` arrays, sentinels already where a
    row revealed none; ``live`` marks rows that present a task (the others get
    :data:`NO_ORACLE`). The free texts ``context`` and ``message`` are not batched."""
    def column(values: np.ndarray) -> np.ndarray:
        if values.dtype == object:
            return np.where(rows, values, _NONE)
        return np.where(rows, values, np.zeros((), dtype=values.dtype))

    def batch(fields: Mapping[str, np.ndarray]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, values in fields.items():
            out[name] = column(values)
            out[f"_{name}"] = rows.copy()
        return out

    oracle = {"phase": np.where(live, phase, NO_ORACLE["phase"]).astype(np.int64),
              "phase_name": np.where(live, phase_name, ""),
              "phase_changed": live & phase_changed,
              "correct": np.where(live, correct, "")}
    infos = batch({"key": key, "t": t.astype(np.int64), "scored": scored, "success": success & scored})
    infos["evidence"] = batch({name: evidence[name] for name in EVIDENCE_FIELDS})
    infos["_evidence"] = rows.copy()
    infos["oracle"] = batch(oracle)
    infos["_oracle"] = rows.copy()
    infos.update(batch(extra))
    return infos
