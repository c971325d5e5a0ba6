"""Memory methods, the simulated reader, the agent loop and evaluation.

Imported as ``tepa_envs.agents``.
"""

from tepa_envs.core import AuditEvent, Evidence, LifecycleState, Record

from .agent import EpisodeResult, MemoryAgent, run_episode
from .evaluation import Evaluation, evaluate, summarize
from .baselines import AppendOnly, ConflictAwareRecency, LastWriteWins, NoMemory, SlidingWindow, TemporalRecency
from .lexical import BM25Index
from .forgetting import OracleReset, ReactiveForgetting
from .protocol import Memory, MemoryBase
from .reader import EvidenceReader
from .registry import METHOD_NAMES, METHODS, load_class, make_memory
from .semantic import SemanticRetrieval
from .tepa import TEPA, TEPANoRev, replay_audit
from .tepa_full import TEPAFull
from .trials import TrialGate
from .validation import LWWValidation

__all__ = [
    "AppendOnly", "AuditEvent", "BM25Index", "Evaluation", "evaluate", "summarize", "ConflictAwareRecency", "EpisodeResult", "Evidence", "EvidenceReader",
    "LWWValidation", "LastWriteWins", "LifecycleState", "METHODS", "METHOD_NAMES", "Memory", "MemoryAgent",
    "MemoryBase", "NoMemory", "OracleReset", "ReactiveForgetting", "Record", "SemanticRetrieval",
    "SlidingWindow", "TEPA", "TEPAFull", "TEPANoRev", "TemporalRecency", "TrialGate", "load_class",
    "make_memory", "replay_audit", "run_episode",
]
