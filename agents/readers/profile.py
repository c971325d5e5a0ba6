"""Reader profiles: how the simulated reader reads, as versioned data.

A :class:`ReaderProfile` says how often the simulated reader
(:class:`~tepa_envs.agents.readers.evidence_reader.EvidenceReader`) follows what the
memory shows, per kind of prompt, and what it does when the memory shows nothing:

* ``follow_plain``: the prompt shows records that all name one usable value;
* ``follow_validity``: the records carry their validity (TEPA and its variants,
  :func:`~tepa_envs.agents.readers.prompt.shows_validity`); takes precedence over
  the next two kinds, since showing a validity is what changes how a language model
  reads the same records (the README's LM study);
* ``follow_conflict``: the records name two or more different usable values;
* ``stated_prob``: the task's text states a value that differs from the top record:
  the probability of siding with the statement;
* ``empty_explore_prob`` and ``empty_fallback``: the memory shows nothing usable:
  with probability ``empty_explore_prob`` the reader explores uniformly among the
  choices, otherwise it takes ``empty_fallback``: ``"default"`` (the task's first
  choice, a fixed default) or ``"repeat"`` (its own last choice when it is a choice
  of this task, else the first).

Shipped profiles (:data:`PROFILES`, files under ``agents/readers/profiles/``):
``default`` (the reader of every headline table: follow 0.95 on every kind, explore
uniformly when nothing is shown, stated 0.5; its episodes are identical to
``EvidenceReader()``'s), ``ideal`` (follows every prompt), ``never-explore``
(``default`` that never explores when the memory shows nothing) and
``smollm2-135m`` (measured from the packaged SmolLM2-135M by ``tepa-bench
calibrate``; the file records how). A profile file is TOML or JSON with the fields
of :class:`ReaderProfile`; :meth:`ReaderProfile.reader_kwargs` are the simulated
reader's arguments, which is how a profile reaches a run (``--reader-profile``) and
its cell identity.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from tepa_envs.agents.readers.evidence_reader import FALLBACKS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SCHEMA_VERSION = 1
"""The version of the profile format; a file of another version is refused."""
PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
PROBABILITIES: tuple[str, ...] = ("follow_plain", "follow_validity", "follow_conflict", "stated_prob",
                                  "empty_explore_prob")
MAX_PROFILE_BYTES = 1 << 20


def _probability(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number in [0, 1], got {type(value).__name__}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


@dataclass(frozen=True)
class ReaderProfile:
    """How the simulated reader reads (see the module docstring).

    ``name`` labels the profile in results; ``source`` says where its numbers come
    from; ``intervals`` holds, for a measured profile, the 95 % interval of each
    measured parameter (``{"follow_plain": [low, high], ...}``) and ``counts`` the
    decisions behind each.
    """

    name: str
    follow_plain: float = 0.95
    follow_validity: float = 0.95
    follow_conflict: float = 0.95
    stated_prob: float = 0.5
    empty_explore_prob: float = 1.0
    empty_fallback: str = "default"
    source: str = ""
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    counts: Mapping[str, int] = field(default_factory=dict)
    version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        for name in PROBABILITIES:
            object.__setattr__(self, name, _probability(name, getattr(self, name)))
        if not isinstance(self.empty_fallback, str):
            raise TypeError(f"empty_fallback must be a str, got {type(self.empty_fallback).__name__}")
        if self.empty_fallback not in FALLBACKS:
            raise ValueError(f"empty_fallback must be one of {', '.join(FALLBACKS)}, got {self.empty_fallback!r}")
        if not isinstance(self.source, str):
            raise TypeError(f"source must be a str, got {type(self.source).__name__}")
        if isinstance(self.version, bool) or not isinstance(self.version, int):
            raise TypeError(f"version must be an int, got {type(self.version).__name__}")
        if self.version != SCHEMA_VERSION:
            raise ValueError(f"version {self.version} is not this library's profile format ({SCHEMA_VERSION})")
        object.__setattr__(self, "intervals", _intervals(self.intervals))
        object.__setattr__(self, "counts", _counts(self.counts))

    def reader_kwargs(self) -> dict[str, Any]:
        """The simulated reader's arguments for this profile."""
        return {"follow_prob": self.follow_plain, "follow_validity": self.follow_validity,
                "follow_conflict": self.follow_conflict, "stated_prob": self.stated_prob,
                "empty_explore_prob": self.empty_explore_prob, "empty_fallback": self.empty_fallback}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["intervals"] = {k: list(v) for k, v in self.intervals.items()}
        data["counts"] = dict(self.counts)
        return data

    def to_toml(self) -> str:
        """The profile as TOML (readable by :func:`load_profile`)."""
        lines = [f"version = {self.version}", f"name = {json.dumps(self.name)}",
                 f"source = {json.dumps(self.source)}"]
        lines += [f"{name} = {getattr(self, name)!r}" for name in PROBABILITIES]
        lines.append(f"empty_fallback = {json.dumps(self.empty_fallback)}")
        if self.counts:
            lines += ["", "[counts]"] + [f"{k} = {v}" for k, v in self.counts.items()]
        if self.intervals:
            lines += ["", "[intervals]"] + [f"{k} = [{low!r}, {high!r}]" for k, (low, high) in self.intervals.items()]
        return "\n".join(lines) + "\n"


def _intervals(value: object) -> dict[str, tuple[float, float]]:
    if not isinstance(value, Mapping):
        raise TypeError(f"intervals must be a table, got {type(value).__name__}")
    out = {}
    for key, pair in value.items():
        if key not in PROBABILITIES:
            raise ValueError(f"intervals names {key!r}, not one of {', '.join(PROBABILITIES)}")
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"intervals.{key} must be [low, high], got {pair!r}")
        low, high = (_probability(f"intervals.{key}", v) for v in pair)
        if low > high:
            raise ValueError(f"intervals.{key} has low {low} > high {high}")
        out[str(key)] = (low, high)
    return out


def _counts(value: object) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise TypeError(f"counts must be a table, got {type(value).__name__}")
    out = {}
    for key, n in value.items():
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"counts.{key} must be an int, got {type(n).__name__}")
        if n < 0:
            raise ValueError(f"counts.{key} must be >= 0, got {n}")
        out[str(key)] = n
    return out


def profile_from_dict(data: Mapping[str, Any], *, origin: str = "profile") -> ReaderProfile:
    """A profile from its fields; unknown fields are refused, naming them and ``origin``."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{origin}: a profile must be a table of fields, got {type(data).__name__}")
    known = {f.name for f in fields(ReaderProfile)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{origin}: unknown profile field(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    if "name" not in data:
        raise ValueError(f"{origin}: a profile needs a name")
    return ReaderProfile(**data)


def read_profile_file(path: str | Path) -> ReaderProfile:
    """The profile in a ``.toml`` or ``.json`` file (a regular file of at most 1 MiB)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"reader profile {path} is not a file")
    if path.stat().st_size > MAX_PROFILE_BYTES:
        raise ValueError(f"reader profile {path} is larger than {MAX_PROFILE_BYTES} bytes")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ValueError(f"reader profile {path} is not valid {path.suffix.lstrip('.') or 'TOML'}: {exc}") from None
    return profile_from_dict(data, origin=str(path))


def shipped_profiles() -> dict[str, Path]:
    """Name -> file of every profile shipped with the library."""
    return {p.stem: p for p in sorted(PROFILE_DIR.glob("*.toml"))}


def load_profile(name_or_path: str | Path) -> ReaderProfile:
    """A shipped profile by name (:func:`shipped_profiles`), or a profile file.

    >>> load_profile("ideal").name
    'ideal'
    >>> load_profile("no-such-profile")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: unknown reader profile 'no-such-profile': name one of ... or give a .toml/.json file
    """
    if not isinstance(name_or_path, (str, Path)):
        raise TypeError(f"reader profile must be a name or a path, got {type(name_or_path).__name__}")
    shipped = shipped_profiles()
    if isinstance(name_or_path, str) and name_or_path in shipped:
        return read_profile_file(shipped[name_or_path])
    path = Path(name_or_path)
    if path.suffix.lower() in (".toml", ".json"):
        return read_profile_file(path)
    raise ValueError(f"unknown reader profile {str(name_or_path)!r}: name one of {', '.join(shipped)} "
                     "or give a .toml/.json file")


def write_profile(profile: ReaderProfile, path: str | Path) -> Path:
    """Write ``profile`` as TOML to ``path`` atomically (a temporary file, then a rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(profile.to_toml(), encoding="utf-8")
    tmp.replace(path)
    return path


PROFILES: tuple[str, ...] = ("ideal", "default", "never-explore", "smollm2-135m")
"""The profiles every headline table is ranked under."""


__all__ = ["FALLBACKS", "PROFILES", "PROFILE_DIR", "ReaderProfile", "SCHEMA_VERSION", "load_profile",
           "profile_from_dict", "read_profile_file", "shipped_profiles", "write_profile"]
