"""Sweep specifications: a TOML file naming environments with grids of kwargs,
methods, reader-kwargs grids, seeds and the statistics to report.

A spec expands to *cells* (one environment id with one set of env kwargs, one
method and one set of reader kwargs) times *seeds*; one cell on one seed is an
episode. Every cell has a stable identity, :attr:`Cell.cell_id`: the sha256 of
the canonical JSON of its env id, env kwargs, method, reader kwargs and the
package version, so results of different sweeps (and of ``tepa-bench run
--store``) land in, and can be compared through, the same cells. Cells sharing
env id, env kwargs and reader kwargs form a *group*: the unit one
``results.json`` reports (methods compared paired by seed).

The TOML layout (every key but ``[[env]].id`` optional, unknown keys refused)::

    name = "drift-grid"
    seeds = 100                          # 0..99; or a list, [0, 5, 9]; or {start = 1000, count = 50}
    methods = ["tepa", "lww", "append-only", "my_pkg.mod:MyMemory",
               {label = "tepa count", spec = "tepa", kwargs = {failed_candidate = "count"}}]

    [statistics]                         # what `tepa-bench report` computes for every group
    alpha = 0.05
    n_perm = 50000
    baselines = ["append-only", "no-memory"]

    [reader]                             # the simulated reader, the same for every method
    kwargs = {stated_prob = 0.5}         # fixed
    grid = {follow_prob = [0.9, 0.99]}   # each entry a list of values: one axis of the grid

    [[env]]
    id = "TEPA/RegimeDrift-v0"
    kwargs = {phase_lengths = [40, 40, 40, 40]}
    grid = {n_keys = [1, 2, 4]}

    [[env]]
    id = "TEPA/PreferenceStream-v0"
    methods = ["tepa", "no-memory"]      # instead of the top-level list for this env

Grids are Cartesian products in the order written; a kwarg whose value is itself
a list (``phase_lengths``) goes in ``kwargs``, or in ``grid`` as a list of lists.
:func:`load_spec` checks everything that can be checked before an episode runs
(TOML syntax, keys, types, environment ids and kwargs, methods, reader kwargs)
and raises :class:`SpecError` with one line saying what is wrong.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import stat
import sys
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import gymnasium as gym

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.error import TepaError
from tepa_envs.agents.evaluation.analysis.statistics import DEFAULT_N_PERM
from tepa_envs.agents.evaluation.engine.jobs import MethodSpec, method_label
from tepa_envs.agents.evaluation.engine.validate import env_kwarg_names, validate_methods
from tepa_envs.agents.memories.registry import METHOD_NAMES

MAX_SEEDS = 1_000_000
MAX_SPEC_BYTES = 1 << 20
"""Largest sweep spec read (1 MiB): a spec is a few lines; a bigger file is refused unread."""
MAX_NESTING = 64
"""Deepest nesting of lists and tables in a spec's (or a command line's JSON) values."""
MAX_N_PERM = 10_000_000
"""Largest ``statistics.n_perm``: far beyond the precision any report needs (default 50,000)."""
DEFAULT_BASELINES: tuple[str, ...] = ("append-only", "no-memory")


class SpecError(TepaError, ValueError):
    """A sweep spec that cannot run: one line naming the file and what is wrong."""


def package_version() -> str:
    """The installed ``tepa-envs`` version (the package's ``__version__`` in an uninstalled checkout)."""
    try:
        return version("tepa-envs")
    except PackageNotFoundError:  # pragma: no cover
        return str(getattr(tepa_envs, "__version__", "unknown"))


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 as is: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def method_identity(method: str | MethodSpec) -> dict[str, Any]:
    """The JSON form of a method in a cell's identity: ``{"spec": name}`` for a name or
    import path, ``{"label", "spec", "kwargs"}`` for a :class:`MethodSpec`."""
    if isinstance(method, MethodSpec):
        return {"label": method.label, "spec": method.spec, "kwargs": method.kwargs}
    return {"spec": method}


def method_from_identity(data: Mapping[str, Any]) -> str | MethodSpec:
    if "label" in data:
        return MethodSpec(str(data["label"]), str(data["spec"]), dict(data.get("kwargs", {})))
    return str(data["spec"])


def check_nesting(value: Any, where: str = "value", limit: int = MAX_NESTING) -> None:
    """:class:`SpecError` when ``value`` (JSON or TOML data: dicts and lists) nests deeper than
    ``limit``; walked without recursion, so any depth is refused cleanly."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            raise SpecError(f"{where} nests lists or tables deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children)


def _digest(payload: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Cell:
    """One environment (id and kwargs), one method and one set of reader kwargs."""

    env_id: str
    env_kwargs: dict[str, Any]
    method: str | MethodSpec
    reader_kwargs: dict[str, Any] = field(default_factory=dict)
    version: str = field(default_factory=package_version)

    @property
    def label(self) -> str:
        """The name the method is reported under."""
        return method_label(self.method)

    def identity(self) -> dict[str, Any]:
        return {"env_id": self.env_id, "env_kwargs": self.env_kwargs, "method": method_identity(self.method),
                "reader_kwargs": self.reader_kwargs, "version": self.version}

    @property
    def cell_id(self) -> str:
        """sha256 (hex) of the canonical JSON of :meth:`identity`."""
        return _digest(self.identity())

    @property
    def group_id(self) -> str:
        """sha256 (hex) of env id, env kwargs, reader kwargs and version: the cells reported together."""
        identity = self.identity()
        del identity["method"]
        return _digest(identity)


@dataclass(frozen=True)
class Statistics:
    """What a report computes: ``summarize(alpha=, n_perm=, baselines=)``."""

    alpha: float = 0.05
    n_perm: int = DEFAULT_N_PERM
    baselines: tuple[str, ...] = DEFAULT_BASELINES

    def to_json(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "n_perm": self.n_perm, "baselines": list(self.baselines)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Statistics:
        return cls(float(data.get("alpha", 0.05)), int(data.get("n_perm", DEFAULT_N_PERM)),
                   tuple(str(b) for b in data.get("baselines", DEFAULT_BASELINES)))


@dataclass(frozen=True)
class SweepSpec:
    """Cells × seeds, and the statistics to report."""

    name: str
    cells: tuple[Cell, ...]
    seeds: tuple[int, ...]
    statistics: Statistics = Statistics()
    source: str = ""

    @property
    def episodes(self) -> int:
        return len(self.cells) * len(self.seeds)

    def groups(self) -> dict[str, list[Cell]]:
        """Cells by group id, in spec order."""
        groups: dict[str, list[Cell]] = {}
        for cell in self.cells:
            groups.setdefault(cell.group_id, []).append(cell)
        return groups

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "seeds": list(self.seeds), "statistics": self.statistics.to_json(),
                "cells": [cell.identity() for cell in self.cells]}


# ----------------------------------------------------------------------------- parsing
_TOP_KEYS = {"name", "seeds", "methods", "statistics", "reader", "env"}
_ENV_KEYS = {"id", "kwargs", "grid", "methods"}
_GRID_KEYS = {"kwargs", "grid"}
_STAT_KEYS = {"alpha", "n_perm", "baselines"}


def _check_keys(where: str, table: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise SpecError(f"{where}: unknown key {unknown[0]!r}; valid: {', '.join(sorted(allowed))}")


def _table(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SpecError(f"{where} must be a table, got {type(value).__name__}")
    return value


def _grid(where: str, table: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The kwargs of every point of ``kwargs`` × ``grid``, in the order written."""
    fixed = dict(_table(f"{where}.kwargs", table.get("kwargs", {})))
    grid = _table(f"{where}.grid", table.get("grid", {}))
    axes = []
    for name, values in grid.items():
        if not isinstance(values, list):
            raise SpecError(f"{where}.grid.{name} must be a list of values (one axis of the grid), "
                            f"got {type(values).__name__}")
        if not values:
            raise SpecError(f"{where}.grid.{name} is an empty grid axis: give at least one value")
        if name in fixed:
            raise SpecError(f"{where}: {name!r} is both in kwargs and in grid")
        axes.append((name, values))
    return [{**fixed, **dict(zip([a for a, _ in axes], point))}
            for point in itertools.product(*(v for _, v in axes))]


def _seeds(value: Any) -> tuple[int, ...]:
    if isinstance(value, bool):
        raise SpecError("seeds must be a count, a list of ints or {start, count}")
    if isinstance(value, int):
        if not 1 <= value <= MAX_SEEDS:
            raise SpecError(f"seeds must be between 1 and {MAX_SEEDS:,}, got {value}")
        return tuple(range(value))
    if isinstance(value, dict):
        _check_keys("seeds", value, {"start", "count"})
        start, count = value.get("start", 0), value.get("count")
        if not isinstance(start, int) or isinstance(start, bool) or start < 0:
            raise SpecError(f"seeds.start must be a non-negative int, got {start!r}")
        if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_SEEDS:
            raise SpecError(f"seeds.count must be an int between 1 and {MAX_SEEDS:,}, got {count!r}")
        return tuple(range(start, start + count))
    if isinstance(value, list):
        if not value:
            raise SpecError("seeds is an empty list")
        if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value):
            raise SpecError("seeds must be non-negative ints")
        if len(set(value)) != len(value):
            raise SpecError("seeds lists a seed twice")
        if len(value) > MAX_SEEDS:
            raise SpecError(f"at most {MAX_SEEDS:,} seeds")
        return tuple(sorted(value))
    raise SpecError(f"seeds must be a count, a list of ints or {{start, count}}, got {type(value).__name__}")


def _methods(where: str, value: Any) -> list[str | MethodSpec]:
    if not isinstance(value, list):
        raise SpecError(f"{where} must be a list of method names, import paths or {{label, spec, kwargs}} tables")
    if not value:
        raise SpecError(f"{where} is empty; valid names: {', '.join(METHOD_NAMES)} or 'package.module:Class'")
    methods: list[str | MethodSpec] = []
    for item in value:
        if isinstance(item, str):
            if item == "all":
                methods.extend(m for m in METHOD_NAMES if m not in methods)
                continue
            if ":" not in item and item not in METHOD_NAMES:
                raise SpecError(f"{where}: unknown method {item!r}; valid names: {', '.join(METHOD_NAMES)} "
                                "or an import path 'package.module:ClassName'")
            methods.append(item)
        elif isinstance(item, dict):
            _check_keys(f"{where} entry", item, {"label", "spec", "kwargs"})
            spec: Any = item.get("spec")  # the file's value, unchecked here: MethodSpec refuses a non-str
            try:
                methods.append(MethodSpec(item.get("label", ""), spec, dict(item.get("kwargs", {}))))
            except TypeError as exc:
                raise SpecError(f"{where}: {exc}") from None
        else:
            raise SpecError(f"{where}: a method is a name or a {{label, spec, kwargs}} table, got {item!r}")
    labels = [method_label(m) for m in methods]
    twice = sorted({m for m in labels if labels.count(m) > 1})
    if twice:
        raise SpecError(f"{where}: method listed twice: {', '.join(twice)}")
    return methods


def parse_spec(data: Mapping[str, Any], source: str = "spec", *, validate: bool = True) -> SweepSpec:
    """The :class:`SweepSpec` of a parsed TOML document; ``validate`` also builds every
    group's environment and every method's agent once (nothing runs an episode)."""
    check_nesting(data, "the spec")
    _check_keys("top level", data, _TOP_KEYS)
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise SpecError(f"name must be a string, got {name!r}")
    if "seeds" not in data:
        raise SpecError("seeds is missing: a count (seeds = 100), a list or {start, count}")
    seeds = _seeds(data["seeds"])
    stats = _table("statistics", data.get("statistics", {}))
    _check_keys("statistics", stats, _STAT_KEYS)
    alpha, n_perm = stats.get("alpha", 0.05), stats.get("n_perm", DEFAULT_N_PERM)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise SpecError(f"statistics.alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(n_perm, bool) or not isinstance(n_perm, int) or not 1 <= n_perm <= MAX_N_PERM:
        raise SpecError(f"statistics.n_perm must be an int between 1 and {MAX_N_PERM:,}, got {n_perm!r}")
    baselines = stats.get("baselines", list(DEFAULT_BASELINES))
    if not isinstance(baselines, list) or not all(isinstance(b, str) for b in baselines):
        raise SpecError("statistics.baselines must be a list of method labels")
    statistics = Statistics(float(alpha), n_perm, tuple(baselines))

    reader = _table("reader", data.get("reader", {}))
    _check_keys("reader", reader, _GRID_KEYS)
    reader_points = _grid("reader", reader)
    default_methods = _methods("methods", data["methods"]) if "methods" in data else None

    envs = data.get("env")
    if envs is None:
        raise SpecError("no [[env]] table: a sweep needs at least one environment")
    if not isinstance(envs, list) or not envs:
        raise SpecError("env must be an array of tables ([[env]]) with at least one entry")
    version = package_version()
    cells: list[Cell] = []
    for i, env in enumerate(envs):
        where = f"env[{i}]"
        env = _table(where, env)
        _check_keys(where, env, _ENV_KEYS)
        env_id = env.get("id")
        if not isinstance(env_id, str):
            raise SpecError(f"{where}.id is missing: the environment id, e.g. 'TEPA/RegimeDrift-v0'")
        if env_id not in gym.envs.registry:
            tepa = sorted(k for k in gym.envs.registry if k.startswith("TEPA/"))
            raise SpecError(f"{where}: unknown environment {env_id!r}; registered TEPA environments: "
                            f"{', '.join(tepa)}")
        where = f"env[{i}] ({env_id})"
        methods = _methods(f"{where}.methods", env["methods"]) if "methods" in env else default_methods
        if methods is None:
            raise SpecError(f"{where}: no methods (give a top-level methods list or {where}.methods)")
        points = _grid(where, env)
        valid = env_kwarg_names(env_id)
        for point in points:
            unknown = sorted(set(point) - set(valid))
            if unknown:
                raise SpecError(f"{where}: unknown kwarg {unknown[0]!r}; valid: {', '.join(valid)}")
        for env_kwargs in points:
            for reader_kwargs in reader_points:
                for method in methods:
                    cells.append(Cell(env_id, dict(env_kwargs), method, dict(reader_kwargs), version))
    for cell in cells:  # canonical JSON: NaN/inf and non-JSON values (TOML dates) are refused here
        try:
            canonical_json(cell.identity())
        except (TypeError, ValueError) as exc:
            raise SpecError(f"{cell.env_id}: kwargs must be plain JSON values: {exc}") from None
    ids = [c.cell_id for c in cells]
    if len(set(ids)) != len(ids):
        raise SpecError("the spec names the same cell twice (an env listed twice with the same kwargs?)")
    spec = SweepSpec(name, tuple(cells), seeds, statistics, source)
    if validate:
        validate_spec(spec)
    return spec


def validate_spec(spec: SweepSpec) -> None:
    """Build each group's environment and each cell's agent once; :class:`SpecError` on failure."""
    for cells in spec.groups().values():
        first = cells[0]
        try:
            validate_methods(first.env_id, first.env_kwargs, [c.method for c in cells], first.reader_kwargs)
        except (ValueError, TypeError, ImportError, AttributeError) as exc:
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise SpecError(f"{first.env_id} {canonical_json(first.env_kwargs)}: {text}") from None
        except Exception as exc:  # an environment or a user's method raising anything else while built
            raise SpecError(f"{first.env_id} {canonical_json(first.env_kwargs)}: {type(exc).__name__}: "
                            f"{' '.join(str(exc).split())}") from None


def read_spec_bytes(path: str | Path, limit: int = MAX_SPEC_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: a device
    (``/dev/zero``), a FIFO, a directory or a larger file is :class:`SpecError`, unread."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        if path.is_dir():
            raise SpecError(f"{path} is a directory, not a TOML spec")
        fd = os.open(path, flags)  # O_NONBLOCK: opening a FIFO does not wait for a writer
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SpecError(f"{path} is a directory, not a TOML spec") from None
    except OSError as exc:
        raise SpecError(f"{path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SpecError(f"{path} is a directory, not a TOML spec")
        if not stat.S_ISREG(info.st_mode):
            raise SpecError(f"{path} is not a regular file (a device, FIFO or socket): a spec is a TOML file")
        if info.st_size > limit:
            raise SpecError(f"{path} is {info.st_size:,} bytes, over the {limit:,}-byte limit of a spec")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # a file growing while read stops at the limit too
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise SpecError(f"{path} is over the {limit:,}-byte limit of a spec")
        return b"".join(chunks)
    except OSError as exc:
        raise SpecError(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def load_spec(path: str | Path, *, validate: bool = True) -> SweepSpec:
    """Read and check a TOML sweep spec; :class:`SpecError` (one line) when it cannot run:
    not a regular file, over :data:`MAX_SPEC_BYTES`, not UTF-8 TOML, values nested deeper
    than :data:`MAX_NESTING`, or anything :func:`parse_spec` refuses."""
    path = Path(path)
    text = read_spec_bytes(path)
    try:
        data = tomllib.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{path}: malformed TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise SpecError(f"{path}: values nested too deeply to parse (limit {MAX_NESTING} levels)") from None
    except MemoryError:
        raise SpecError(f"{path}: out of memory while parsing the TOML") from None
    try:
        return parse_spec(data, str(path), validate=validate)
    except SpecError as exc:
        raise SpecError(f"{path}: {exc}") from None
    except RecursionError:
        raise SpecError(f"{path}: values nested too deeply (limit {MAX_NESTING} levels)") from None
    except MemoryError:
        raise SpecError(f"{path}: out of memory while checking the spec") from None


def single_group_spec(env_id: str, env_kwargs: Mapping[str, Any], methods: Iterable[str | MethodSpec],
                      seeds: Iterable[int], reader_kwargs: Mapping[str, Any] | None = None,
                      statistics: Statistics = Statistics(), name: str = "run") -> SweepSpec:
    """The spec of ``tepa-bench run``: one environment, methods × seeds (already validated)."""
    version = package_version()
    cells = tuple(Cell(env_id, dict(env_kwargs), m, dict(reader_kwargs or {}), version) for m in methods)
    return SweepSpec(name, cells, tuple(int(s) for s in seeds), statistics, "")


__all__ = ["Cell", "MAX_N_PERM", "MAX_NESTING", "MAX_SPEC_BYTES", "SpecError", "check_nesting", "read_spec_bytes", "Statistics", "SweepSpec", "canonical_json", "load_spec", "package_version",
           "parse_spec", "single_group_spec", "validate_spec"]
