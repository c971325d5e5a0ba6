"""Memory methods, readers, the agent loop and evaluation, imported as ``tepa_envs.agents``.

Sub-packages: :mod:`~tepa_envs.agents.memories` (the protocol, the registry and
every method), :mod:`~tepa_envs.agents.readers` (readers and the agent loop) and
:mod:`~tepa_envs.agents.evaluation` (harness, statistics, settings, reports, CLI).
"""

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
    ReactiveForgetting,
    SemanticRetrieval,
    SlidingWindow,
    TemporalRecency,
    TEPAFull,
    TEPANoRev,
    TEPAPaper,
    TrialGate,
    load_class,
    make_memory,
    replay_audit,
)
from tepa_envs.agents.readers import EpisodeResult, EvidenceReader, MemoryAgent, run_episode
from tepa_envs.core import AuditEvent, Evidence, LifecycleState, Record

__all__ = [
    "AppendOnly", "AuditEvent", "BM25Index", "ConflictAwareRecency", "EpisodeResult", "Evaluation", "Evidence",
    "EvidenceReader", "LWWValidation", "LastWriteWins", "LifecycleState", "METHODS", "METHOD_NAMES", "Memory",
    "MemoryAgent", "MemoryBase", "MemoryHooks", "NoMemory", "OracleReset", "ReactiveForgetting", "Record", "SemanticRetrieval",
    "SlidingWindow", "TEPA", "TEPAFull", "TEPANoRev", "TEPAPaper", "TemporalRecency", "TrialGate", "evaluate", "load_class",
    "make_memory", "replay_audit", "run_episode", "summarize",
]
