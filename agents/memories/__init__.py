"""Memory methods: the protocol, the registry of shipped methods, and each method."""

from tepa_envs.agents.memories.conformance import MemoryConformanceError, check_memory
from tepa_envs.agents.memories.baselines import (
    AppendOnly,
    ConflictAwareRecency,
    LastWriteWins,
    NoMemory,
    SlidingWindow,
    TemporalRecency,
)
from tepa_envs.agents.memories.changepoint import (
    ADWINMemory,
    BOCPDMemory,
    ChangePointMemory,
    CUSUMMemory,
    DiscountedBeta,
)
from tepa_envs.agents.memories.forgetting import ReactiveForgetting
from tepa_envs.agents.memories.oracles import OracleReset, OracleView
from tepa_envs.agents.memories.lexical import BM25Index
from tepa_envs.agents.memories.lww_validation import LWWValidation
from tepa_envs.agents.memories.protocol import AuditedMemory, Memory, MemoryBase, MemoryHooks, ReportsStates, hooks_of
from tepa_envs.agents.memories.registry import METHOD_NAMES, METHODS, load_class, make_memory
from tepa_envs.agents.memories.semantic import SemanticRetrieval
from tepa_envs.agents.memories.tepa import TEPA, TEPANoRev, TEPAPaper, replay_audit
from tepa_envs.agents.memories.tepa_choices import PAPER_READINGS, PRESETS as TEPA_PRESETS, TEPAChoices
from tepa_envs.agents.memories.tepa_full import TEPAFull
from tepa_envs.agents.memories.tepa_params import TEPAParams
from tepa_envs.agents.memories.tepa_regime import TEPARegime
from tepa_envs.agents.memories.trials import TrialGate
from tepa_envs.agents.memories.two_strike import TwoStrike

__all__ = [
    "MemoryConformanceError", "check_memory",
    "ADWINMemory", "AppendOnly", "AuditedMemory", "BM25Index", "BOCPDMemory", "CUSUMMemory", "ChangePointMemory",
    "DiscountedBeta", "ConflictAwareRecency", "LWWValidation", "LastWriteWins", "METHODS",
    "METHOD_NAMES", "Memory", "MemoryBase", "MemoryHooks", "NoMemory", "OracleReset", "OracleView", "PAPER_READINGS",
    "ReactiveForgetting", "ReportsStates", "SemanticRetrieval", "SlidingWindow", "TEPA", "TEPAChoices", "TEPAFull", "TEPANoRev",
    "TEPAPaper", "TEPAParams", "TEPARegime", "TEPA_PRESETS", "TemporalRecency", "TrialGate", "TwoStrike",
    "hooks_of", "load_class", "make_memory", "replay_audit",
]
