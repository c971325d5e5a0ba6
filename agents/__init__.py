"""Memory methods, readers, the agent loop and evaluation, imported as ``tepa_envs.agents``.

Sub-packages: :mod:`~tepa_envs.agents.memories` (the protocol, the registry and
every method), :mod:`~tepa_envs.agents.readers` (readers and the agent loop) and
:mod:`~tepa_envs.agents.evaluation` (harness, statistics, settings, reports, CLI).

Names are loaded on first use (module ``__getattr__``, as Gymnasium's wrappers are),
so importing one memory loads neither the evaluation harness nor the language-model
readers.
"""

from typing import TYPE_CHECKING

from tepa_envs.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from tepa_envs.agents.evaluation import Evaluation, evaluate, summarize
    from tepa_envs.agents.memories import (
        METHOD_NAMES,
        METHODS,
        TEPA,
        AppendOnly,
        BM25Index,
        ConflictAwareRecency,
        LastWriteWins,
        LWWValidation,
        Memory,
        MemoryBase,
        MemoryHooks,
        NoMemory,
        OracleReset,
        OracleView,
        ReactiveForgetting,
        SemanticRetrieval,
        SlidingWindow,
        TemporalRecency,
        TEPAFull,
        TEPANoRev,
        TEPAPaper,
        TEPAParams,
        TrialGate,
        TwoStrike,
        load_class,
        make_memory,
        replay_audit,
    )
    from tepa_envs.agents.readers import EpisodeResult, EvidenceReader, MemoryAgent, run_episode
    from tepa_envs.core import AuditEvent, Evidence, LifecycleState, Record

_LAZY: dict[str, str] = {
    "Evaluation": "tepa_envs.agents.evaluation",
    "evaluate": "tepa_envs.agents.evaluation",
    "summarize": "tepa_envs.agents.evaluation",
    "METHOD_NAMES": "tepa_envs.agents.memories",
    "METHODS": "tepa_envs.agents.memories",
    "TEPA": "tepa_envs.agents.memories",
    "TEPAParams": "tepa_envs.agents.memories",
    "AppendOnly": "tepa_envs.agents.memories",
    "BM25Index": "tepa_envs.agents.memories",
    "ConflictAwareRecency": "tepa_envs.agents.memories",
    "LastWriteWins": "tepa_envs.agents.memories",
    "LWWValidation": "tepa_envs.agents.memories",
    "Memory": "tepa_envs.agents.memories",
    "MemoryBase": "tepa_envs.agents.memories",
    "MemoryHooks": "tepa_envs.agents.memories",
    "NoMemory": "tepa_envs.agents.memories",
    "OracleReset": "tepa_envs.agents.memories",
    "OracleView": "tepa_envs.agents.memories",
    "ReactiveForgetting": "tepa_envs.agents.memories",
    "SemanticRetrieval": "tepa_envs.agents.memories",
    "SlidingWindow": "tepa_envs.agents.memories",
    "TemporalRecency": "tepa_envs.agents.memories",
    "TEPAFull": "tepa_envs.agents.memories",
    "TEPANoRev": "tepa_envs.agents.memories",
    "TEPAPaper": "tepa_envs.agents.memories",
    "TrialGate": "tepa_envs.agents.memories",
    "TwoStrike": "tepa_envs.agents.memories",
    "load_class": "tepa_envs.agents.memories",
    "make_memory": "tepa_envs.agents.memories",
    "replay_audit": "tepa_envs.agents.memories",
    "EpisodeResult": "tepa_envs.agents.readers",
    "EvidenceReader": "tepa_envs.agents.readers",
    "MemoryAgent": "tepa_envs.agents.readers",
    "run_episode": "tepa_envs.agents.readers",
    "AuditEvent": "tepa_envs.core",
    "Evidence": "tepa_envs.core",
    "LifecycleState": "tepa_envs.core",
    "Record": "tepa_envs.core",
}
"""Public name -> the module it is loaded from."""


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, globals())

__all__ = [
    "AppendOnly", "AuditEvent", "BM25Index", "ConflictAwareRecency", "EpisodeResult", "Evaluation", "Evidence",
    "EvidenceReader", "LWWValidation", "LastWriteWins", "LifecycleState", "METHODS", "METHOD_NAMES", "Memory",
    "MemoryAgent", "MemoryBase", "MemoryHooks", "NoMemory", "OracleReset", "OracleView", "ReactiveForgetting", "Record", "SemanticRetrieval",
    "SlidingWindow", "TEPA", "TEPAFull", "TEPANoRev", "TEPAPaper", "TEPAParams", "TemporalRecency", "TrialGate", "TwoStrike", "evaluate", "load_class",
    "make_memory", "replay_audit", "run_episode", "summarize",
]
