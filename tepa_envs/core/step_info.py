"""The evidence contract in code: the ``info`` every environment returns.

Every single-agent environment, each agent of the PettingZoo environment and
(batched) the native vector environment build their ``info`` here, so the
contract is written once:

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

from typing import Any, Sequence, TypedDict

import numpy as np

from tepa_envs.core.types import Evidence


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


def batched_step_info(rows: np.ndarray, *, key: np.ndarray, t: np.ndarray, success: np.ndarray | None,
                      stepped: np.ndarray | None, oracle_rows: np.ndarray, phase: np.ndarray,
                      phase_name: np.ndarray, phase_changed: np.ndarray, correct: np.ndarray) -> dict[str, Any]:
    """The infos of the sub-environments in ``rows`` (a bool mask), batched as
    Gymnasium's ``SyncVectorEnv`` batches :func:`step_info` dicts: each entry an
    array with a ``_name`` mask. ``context`` and ``evidence`` are not batched."""
    infos: dict[str, Any] = {
        "key": np.where(rows, key, None), "_key": rows.copy(),
        "t": np.where(rows, t, 0), "_t": rows.copy(),
    }
    if stepped is not None and success is not None and stepped.any():
        infos["success"] = np.where(stepped, success, False)
        infos["_success"] = stepped.copy()
    if oracle_rows.any():
        infos["oracle"] = {
            "phase": np.where(oracle_rows, phase, 0), "_phase": oracle_rows.copy(),
            "phase_name": np.where(oracle_rows, phase_name, None), "_phase_name": oracle_rows.copy(),
            "phase_changed": np.where(oracle_rows, phase_changed, False), "_phase_changed": oracle_rows.copy(),
            "correct": np.where(oracle_rows, correct, None), "_correct": oracle_rows.copy(),
        }
        infos["_oracle"] = oracle_rows.copy()
    return infos
