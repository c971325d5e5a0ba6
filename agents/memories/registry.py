"""Memory methods by CLI name, and loading a user's own method by import path."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable

from tepa_envs.agents.memories.baselines import AppendOnly, ConflictAwareRecency, LastWriteWins, NoMemory, SlidingWindow, TemporalRecency
from tepa_envs.agents.memories.changepoint import ADWINMemory, BOCPDMemory, CUSUMMemory, DiscountedBeta
from tepa_envs.agents.memories.forgetting import ReactiveForgetting
from tepa_envs.agents.memories.oracles import OracleReset, OracleView
from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.memories.semantic import SemanticRetrieval
from tepa_envs.agents.memories.tepa import TEPA, TEPANoRev, TEPAPaper
from tepa_envs.agents.memories.tepa_full import TEPAFull
from tepa_envs.agents.memories.tepa_regime import TEPARegime
from tepa_envs.agents.memories.lww_validation import LWWValidation
from tepa_envs.agents.memories.two_strike import TwoStrike

METHODS: dict[str, Callable[..., Memory]] = {
    "no-memory": NoMemory,
    "append-only": AppendOnly,
    "lww": LastWriteWins,
    "temporal-recency": TemporalRecency,
    "sliding-window": SlidingWindow,
    "reactive-forgetting": ReactiveForgetting,
    "conflict-aware-recency": ConflictAwareRecency,
    "semantic-retrieval": SemanticRetrieval,
    "tepa": TEPA,
    "tepa-norev": TEPANoRev,
    "tepa-full": TEPAFull,
    "tepa-paper": TEPAPaper,
    "lww-validation": LWWValidation,
    "discounted-beta": DiscountedBeta,
    "cusum": CUSUMMemory,
    "bocpd": BOCPDMemory,
    "adwin": ADWINMemory,
    "tepa-regime": TEPARegime,
    "two-strike": TwoStrike,
    "oracle-reset": OracleReset,
    "oracle-view": OracleView,
}
METHOD_NAMES: tuple[str, ...] = tuple(METHODS)


def is_memory(obj: object) -> bool:
    """Whether ``obj`` offers the three methods of the memory protocol."""
    return all(callable(getattr(obj, attr, None)) for attr in ("observe", "retrieve", "reset"))


def load_class(path: str) -> type:
    """Import ``package.module:ClassName``: a class whose instances satisfy the memory
    protocol (callable ``observe``, ``retrieve`` and ``reset``), checked before anything
    is instantiated. ``ValueError`` when the path cannot be found or names a function,
    a builtin, a module attribute that is not a class, or a class without the protocol."""
    if not isinstance(path, str):
        raise TypeError(f"import path must be a str, got {type(path).__name__}")
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f"import path must look like 'package.module:ClassName', got {path!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for memory {path!r}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not inspect.isclass(target):
        kind = ("a builtin function" if inspect.isbuiltin(target) else
                "a function" if inspect.isroutine(target) else
                "a module" if inspect.ismodule(target) else f"a {type(target).__name__}")
        raise ValueError(f"{path!r} is {kind}, not a class: an import path must name a memory class "
                         "(with observe, retrieve and reset)")
    missing = [name for name in ("observe", "retrieve", "reset") if not callable(getattr(target, name, None))]
    if missing:
        raise ValueError(f"{path!r} is not a memory class: it has no callable {', '.join(missing)} "
                         "(a memory needs observe, retrieve and reset)")
    return target


def make_memory(spec: str | Memory, **kwargs: Any) -> Memory:
    """A memory by CLI name (``"tepa"``), by import path (``"pkg.mod:Class"``), or as given."""
    if inspect.isclass(spec):
        raise TypeError(f"got the class {spec.__qualname__}, not a memory: pass an instance, "
                        f"or the import path '{spec.__module__}:{spec.__qualname__}'")
    if not isinstance(spec, str):
        if kwargs:
            raise TypeError("keyword arguments apply only when the memory is given by name")
        if not is_memory(spec):
            raise TypeError(f"{type(spec).__name__} is not a memory: it needs observe, retrieve and reset")
        return spec
    if ":" in spec:
        factory: Callable[..., Any] = load_class(spec)
    elif spec in METHODS:
        factory = METHODS[spec]
    else:
        raise ValueError(f"unknown memory method {spec!r}; valid names: {', '.join(METHOD_NAMES)} "
                         "or an import path 'package.module:ClassName'")
    try:
        memory = factory(**kwargs)
    except TypeError as exc:
        raise TypeError(f"bad arguments for memory {spec!r}: {exc}") from exc
    if not is_memory(memory):
        raise TypeError(f"{spec!r} did not produce a memory: it needs observe, retrieve and reset")
    if not (isinstance(memory, Memory) and isinstance(memory.name, str)):
        raise TypeError(f"memory {spec!r} must have a string attribute 'name'")
    return memory
