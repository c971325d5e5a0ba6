"""``tepa-bench rl``: memory for RL policies, measured.

Does a learned memory (an LSTM policy) cope with stale knowledge as well as an
explicit, revocable memory shown to a feed-forward policy, and what does each
cost in samples and wall time? The study trains every agent
(:mod:`~tepa_envs.agents.evaluation.studies.rl_agents`) on every environment from
several training seeds, evaluates each policy greedily on held-out environment
seeds, and reports:

* **Final success** per phase and ``overall`` (mean over a policy's held-out
  episodes, then mean over training seeds, with a 95 % percentile-bootstrap CI
  across training seeds, :func:`~tepa_envs.agents.evaluation.analysis.statistics.bootstrap_cis`).
* **The drift score**: success in the *reversal phases* (phases whose change
  applies to every key, :meth:`~tepa_envs.core.drift.DriftSchedule.reversal_phases`),
  or, on a scenario without one (Poisson), in every phase after the first.
* **Learning curves**: the drift score against environment steps at each
  checkpoint (mean and CI band across training seeds), and **sample efficiency**:
  the steps at which a seed's curve first reaches 90 % of its final drift score
  (mean and CI across seeds).
* **Paired comparisons**, as in the benchmark protocol but paired by *training
  seed* (every agent trains on the same seeds and is evaluated on the same held-out
  episodes): each agent against ``ppo``, and each memory agent against
  ``recurrent-ppo``, on the final drift score; two-sided sign-flip tests (exact
  for up to 16 seeds), Holm–Bonferroni over the whole family.
* **The time split** of training: environment and memory steps per second,
  the policy's forward passes, the gradient updates and the evaluations.

**Units and resuming.** One (agent, environment, training seed) is one unit, a
:class:`~tepa_envs.agents.evaluation.studies.rl_agents.TrainJob`. Results go to a
results store (:class:`~tepa_envs.agents.evaluation.engine.store.Store`, the one
``tepa-bench sweep`` resumes from): the final evaluation and each checkpoint's
evaluation are cells whose episodes are the held-out episodes (per-task success and
phase; the cell's method kwargs hold the unit's identity, its ``reader_kwargs``
``{"rl_study": <digest of the study's settings>}``, as no reader acts), and a table
``rl_units`` in the same file holds one row per finished unit (its cells, timing,
path and library versions), written after the unit's episodes, so a row means the
unit is complete. A rerun on the same store skips every unit with a row: a killed
study resumes without redoing finished units.

**The spec** (TOML; every key optional, unknown keys refused; :func:`parse_rl_spec`
checks all of it before anything runs or is written)::

    name = "rl-default"
    engine = "sb3"                 # or "rllib" (Ray RLlib; tepa-bench rl --engine rllib overrides)
    agents = ["ppo", "recurrent-ppo", "ppo-framestack", "ppo+tepa", "ppo+oracle-reset", "ppo-mdp-twin",
              {label = "ppo+mine", memory = "my_pkg.memories:MyMemory"}]
    envs = ["TEPA/RegimeDrift-v0", {id = "TEPA/RegimeDrift-v0", kwargs = {n_keys = 2}, label = "two keys"}]
    train_seeds = 5                # 0..4, or a list
    timesteps = 80000              # training steps per unit
    checkpoints = 8                # curve points (evaluations during training), plus the final one
    eval_episodes = 32             # held-out episodes of the final evaluation
    curve_episodes = 16            # held-out episodes at each checkpoint
    fast_path = true               # the native batched vector env where it exists
    alpha = 0.05
    [hyper]                        # Hyper: n_envs, n_steps, batch_size, n_epochs, learning_rate,
    n_envs = 8                     # gamma, ent_coef, net_arch, lstm_hidden_size
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401  (registers the environments)
from tepa_envs.agents.evaluation.analysis.statistics import (
    bootstrap_cis, holm_bonferroni, paired_permutation_tests, smallest_p_value,
)
from tepa_envs.agents.evaluation.engine.backends import LocalBackend, RayBackend, RayNotInstalled, chunks, ray_available
from tepa_envs.agents.evaluation.engine.executor import BatchResult, run_batches
from tepa_envs.agents.evaluation.engine.jobs import MethodSpec
from tepa_envs.agents.evaluation.engine.pool import JobError, leave_if_terminating
from tepa_envs.agents.evaluation.engine.spec import Cell, canonical_json, package_version, read_spec_bytes
from tepa_envs.agents.evaluation.engine.store import (
    Episode, Store, decode_phase, decode_success, encode_phase, encode_success, immediate_transaction,
)
from tepa_envs.agents.evaluation.studies.rl_agents import (
    ENGINES, EVAL_SEED_START, SEED_STRIDE, TWIN_AGENT, AgentSpec, Evaluation, Hyper, TrainJob, TrainResult,
    load_engine, parse_agent, train_unit,
)
from tepa_envs.agents.evaluation.studies.suite import SHORT_NAMES, scenario
from tepa_envs.core.contracts import TaskEnv

RL_VERSION = 2
"""Layout version of ``rl.json`` (2 added ``twins``)."""
AGENTS: tuple[str, ...] = ("ppo", "recurrent-ppo", "ppo-framestack", "ppo+tepa", "ppo+tepa-regime", "ppo+lww",
                           "ppo+append-only", "ppo+reactive-forgetting", "ppo+oracle-reset")
"""The study's agents by default (``ppo+oracle-reset`` is the bound: it is told the true changes)."""
CEILING_AGENTS: tuple[str, ...] = (*AGENTS, TWIN_AGENT)
"""The built-in sizes' agents: :data:`AGENTS` and PPO on each environment's fully observed twin,
the ceiling of a learned policy."""
ENVS: tuple[str, ...] = ("TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-ManyKeys-v0", "TEPA/RegimeDrift-Poisson-v0",
                         "TEPA/PreferenceStream-v0")
"""Controlled drift, two multi-key suite scenarios and the preference stream."""
BASELINE = "ppo"
LEARNED_MEMORY = "recurrent-ppo"
MAX_TIMESTEPS = 10**8
MAX_UNITS = 100_000
SIZES: dict[str, dict[str, Any]] = {
    # about a minute on 2 cores (the tests run it): a smoke test, not a measurement
    "quick": {"name": "rl-quick", "envs": ["TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-Poisson-v0"],
              "agents": list(CEILING_AGENTS), "train_seeds": 2, "timesteps": 2048, "checkpoints": 2,
              "eval_episodes": 8, "curve_episodes": 4},
    # about 20 minutes on 2 cores
    "medium": {"name": "rl-medium", "agents": list(CEILING_AGENTS), "train_seeds": 5, "timesteps": 25_000,
               "checkpoints": 6, "eval_episodes": 32, "curve_episodes": 16},
    # about an hour on 2 cores
    "default": {"name": "rl-default", "agents": list(CEILING_AGENTS), "train_seeds": 5, "timesteps": 80_000,
                "checkpoints": 8, "eval_episodes": 32, "curve_episodes": 16},
}
"""The built-in sizes (``tepa-bench rl --size``), each with :data:`CEILING_AGENTS` (an agent the
engine cannot run here, ``recurrent-ppo`` without sb3-contrib, left out with a note)."""

_TOP_KEYS = {"name", "engine", "agents", "envs", "train_seeds", "timesteps", "checkpoints", "eval_episodes",
             "curve_episodes", "fast_path", "alpha", "hyper"}


@dataclass(frozen=True)
class EnvSpec:
    """An environment of the study: id, kwargs and the label it is reported under."""

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or SHORT_NAMES.get(self.env_id, self.env_id)


@dataclass(frozen=True)
class RLSpec:
    """A checked RL study (see the module docstring for the TOML layout)."""

    name: str
    engine: str
    agents: tuple[AgentSpec, ...]
    envs: tuple[EnvSpec, ...]
    train_seeds: tuple[int, ...]
    timesteps: int
    checkpoints: int
    eval_episodes: int
    curve_episodes: int
    hyper: Hyper = Hyper()
    fast_path: bool = True
    alpha: float = 0.05
    notes: tuple[str, ...] = ()

    @property
    def eval_seeds(self) -> tuple[int, ...]:
        return tuple(range(EVAL_SEED_START, EVAL_SEED_START + self.eval_episodes))

    def settings(self) -> dict[str, Any]:
        """What every unit of the study shares (its digest names the study in the store)."""
        return {"engine": self.engine, "timesteps": self.timesteps, "checkpoints": self.checkpoints,
                "eval_episodes": self.eval_episodes, "curve_episodes": self.curve_episodes,
                "fast_path": self.fast_path, "hyper": self.hyper.to_json(), "version": package_version()}

    def digest(self) -> str:
        return hashlib.sha256(canonical_json(self.settings()).encode("utf-8")).hexdigest()[:16]

    def jobs(self) -> list[TrainJob]:
        """Every unit: environments, then agents, then training seeds."""
        return [TrainJob(self.engine, env.env_id, dict(env.kwargs), agent, seed, self.timesteps, self.checkpoints,
                         self.eval_seeds, self.curve_episodes, self.hyper, self.fast_path)
                for env in self.envs for agent in self.agents for seed in self.train_seeds]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, **self.settings(), "agents": [a.identity() for a in self.agents],
                "envs": [{"id": e.env_id, "kwargs": e.kwargs, "label": e.name} for e in self.envs],
                "train_seeds": list(self.train_seeds), "eval_seeds": [self.eval_seeds[0], len(self.eval_seeds)],
                "alpha": self.alpha}


# ----------------------------------------------------------------------------- parsing
def _int(where: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{where} must be between {low:,} and {high:,}, got {value:,}")
    return value


def _float(where: str, value: Any, low: float, high: float, *, low_open: bool = True) -> float:
    """A number in ``(low, high]`` (``[low, high]`` when not ``low_open``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{where} must be a number, got {type(value).__name__}")
    above = value > low if low_open else value >= low
    if not (math.isfinite(value) and above and value <= high):
        raise ValueError(f"{where} must be in {'(' if low_open else '['}{low:g}, {high:g}], got {value!r}")
    return float(value)


def _seeds(value: Any) -> tuple[int, ...]:
    if isinstance(value, list):
        if not value:
            raise ValueError("train_seeds must not be empty")
        seeds = tuple(_int(f"train_seeds[{i}]", v, 0, EVAL_SEED_START // SEED_STRIDE - 1) for i, v in enumerate(value))
        if len(set(seeds)) != len(seeds):
            raise ValueError("train_seeds holds a seed twice")
        return seeds
    return tuple(range(_int("train_seeds", value, 1, 1000)))


def _env(i: int, value: Any) -> EnvSpec:
    where = f"envs[{i}]"
    if isinstance(value, str):
        value = {"id": value}
    if not isinstance(value, dict):
        raise TypeError(f"{where} must be an environment id or a table {{id, kwargs, label}}, "
                        f"got {type(value).__name__}")
    unknown = set(value) - {"id", "kwargs", "label"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; allowed: id, kwargs, label")
    env_id, kwargs, label = value.get("id"), value.get("kwargs", {}), value.get("label", "")
    if not isinstance(env_id, str):
        raise TypeError(f"{where}.id must be an environment id (a string), got {env_id!r}")
    try:
        gym.spec(env_id)
    except gym.error.Error:
        raise ValueError(f"{where}.id: unknown environment {env_id!r}; valid: "
                         f"{', '.join(tepa_envs.ENV_IDS)}") from None
    if not isinstance(kwargs, dict):
        raise TypeError(f"{where}.kwargs must be a table, got {type(kwargs).__name__}")
    if not isinstance(label, str):
        raise TypeError(f"{where}.label must be a string, got {type(label).__name__}")
    return EnvSpec(env_id, dict(kwargs), label)


def _hyper(value: Any) -> Hyper:
    if not isinstance(value, dict):
        raise TypeError(f"hyper must be a table, got {type(value).__name__}")
    allowed = set(Hyper().to_json())
    unknown = set(value) - allowed
    if unknown:
        raise ValueError(f"hyper: unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(allowed))}")
    out: dict[str, Any] = {}
    for key, high in (("n_envs", SEED_STRIDE), ("n_steps", 100_000), ("batch_size", 1_000_000), ("n_epochs", 1000),
                      ("lstm_hidden_size", 4096)):
        if key in value:
            out[key] = _int(f"hyper.{key}", value[key], 1, high)
    for key, low_open in (("learning_rate", True), ("gamma", True), ("ent_coef", False)):
        if key in value:
            out[key] = _float(f"hyper.{key}", value[key], 0.0, 1.0, low_open=low_open)
    if "net_arch" in value:
        arch = value["net_arch"]
        if not isinstance(arch, list) or not arch:
            raise TypeError("hyper.net_arch must be a non-empty list of layer sizes")
        out["net_arch"] = tuple(_int(f"hyper.net_arch[{i}]", v, 1, 4096) for i, v in enumerate(arch))
    return replace(Hyper(), **out)


def parse_rl_spec(data: Mapping[str, Any], *, check_engine: bool = True, notes: Sequence[str] = ()) -> RLSpec:
    """The :class:`RLSpec` of TOML data (defaults: :data:`SIZES` ``"default"``); ``TypeError`` or
    ``ValueError`` naming the field that is wrong. Everything is checked here, before any
    unit runs or anything is written: environments, agents (each memory is built once on
    each environment), the engine and whether it can run every agent."""
    if not isinstance(data, Mapping):
        raise TypeError(f"an RL spec is a table, got {type(data).__name__}")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(_TOP_KEYS))}")
    base = SIZES["default"]
    name = data.get("name", base["name"])
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    engine = data.get("engine", "sb3")
    if not isinstance(engine, str) or not (engine in ENGINES or ":" in engine):
        raise ValueError(f"engine must be one of {', '.join(ENGINES)} or an import path "
                         f"'package.module:Class', got {engine!r}")
    agents_in = data.get("agents", list(AGENTS))
    if not isinstance(agents_in, list) or not agents_in:
        raise TypeError("agents must be a non-empty list of agent names or tables")
    agents = tuple(parse_agent(a, f"agents[{i}]") for i, a in enumerate(agents_in))
    labels = [a.label for a in agents]
    if len(set(labels)) != len(labels):
        raise ValueError(f"agents: label {next(x for x in labels if labels.count(x) > 1)!r} is given twice")
    envs_in = data.get("envs", list(ENVS))
    if not isinstance(envs_in, list) or not envs_in:
        raise TypeError("envs must be a non-empty list of environment ids or tables")
    envs = tuple(_env(i, e) for i, e in enumerate(envs_in))
    names = [e.name for e in envs]
    if len(set(names)) != len(names):
        raise ValueError(f"envs: {next(x for x in names if names.count(x) > 1)!r} is given twice (add a label)")
    hyper = _hyper(data.get("hyper", {}))
    timesteps = _int("timesteps", data.get("timesteps", base["timesteps"]), 1, MAX_TIMESTEPS)
    if timesteps < hyper.n_envs * hyper.n_steps:
        raise ValueError(f"timesteps must be at least one rollout (hyper.n_envs * hyper.n_steps = "
                         f"{hyper.n_envs * hyper.n_steps:,}), got {timesteps:,}")
    eval_episodes = _int("eval_episodes", data.get("eval_episodes", base["eval_episodes"]), 1, 10_000)
    spec = RLSpec(
        name=name, engine=engine, agents=agents, envs=envs,
        train_seeds=_seeds(data.get("train_seeds", base["train_seeds"])), timesteps=timesteps,
        checkpoints=_int("checkpoints", data.get("checkpoints", base["checkpoints"]), 1, 1000),
        eval_episodes=eval_episodes,
        curve_episodes=_int("curve_episodes", data.get("curve_episodes", min(base["curve_episodes"], eval_episodes)),
                            1, eval_episodes),
        hyper=hyper, fast_path=_bool("fast_path", data.get("fast_path", True)),
        alpha=_alpha(data.get("alpha", 0.05)), notes=tuple(notes))
    if len(spec.jobs()) > MAX_UNITS:
        raise ValueError(f"the spec has {len(spec.jobs()):,} units, over {MAX_UNITS:,}")
    _check_agents(spec, check_engine)
    return spec


def _alpha(value: Any) -> float:
    alpha = _float("alpha", value, 0.0, 1.0)
    if alpha >= 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {value!r}")
    return alpha


def _bool(where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where} must be true or false, got {value!r}")
    return value


def _check_agents(spec: RLSpec, check_engine: bool) -> None:
    """The engine asked whether it runs each agent, and each agent's observation built on each environment."""
    if not check_engine:
        return
    engine = load_engine(spec.engine)
    for i, agent in enumerate(spec.agents):
        reason = engine.missing(agent)
        if reason:
            raise ValueError(f"agents[{i}] ({agent.label}): {reason}")
        for env in spec.envs:
            try:
                engine.check(agent, env.env_id, dict(env.kwargs))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"agents[{i}] ({agent.label}) on {env.env_id}: {str(exc).splitlines()[0]}") from None


def builtin_spec(size: str, engine: str = "sb3") -> RLSpec:
    """A built-in size (:data:`SIZES`) on ``engine``; an agent the engine cannot run here
    (``recurrent-ppo`` without sb3-contrib) is left out, with a note."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    data = {**SIZES[size], "engine": engine}
    runner = load_engine(engine)
    agents, notes = [], []
    for name in data.get("agents", AGENTS):
        reason = runner.missing(parse_agent(name))
        if reason:
            notes.append(f"{name} left out: {reason}")
        else:
            agents.append(name)
    data["agents"] = agents
    return parse_rl_spec(data, notes=notes)


def load_rl_spec(path: str | Path, engine: str | None = None) -> RLSpec:
    """The :class:`RLSpec` of a TOML file (read with the sweep specs' limits); ``engine``, when
    given, replaces the file's ``engine``."""
    raw = read_spec_bytes(path)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: malformed TOML: {' '.join(str(exc).split())}") from None
    if engine is not None:
        data["engine"] = engine
    try:
        return parse_rl_spec(data)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{path}: {exc}") from None


# ----------------------------------------------------------------------------- the store
_UNITS_SCHEMA = """
CREATE TABLE IF NOT EXISTS rl_units (
    unit_id TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    engine TEXT NOT NULL DEFAULT 'sb3',
    env_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    train_seed INTEGER NOT NULL,
    final_cell INTEGER NOT NULL REFERENCES cells (id),
    curve TEXT NOT NULL,
    timesteps INTEGER NOT NULL,
    timing TEXT NOT NULL,
    path TEXT NOT NULL,
    versions TEXT NOT NULL,
    finished_utc TEXT NOT NULL
)
"""


def unit_identity(spec: RLSpec, job: TrainJob) -> dict[str, Any]:
    """What makes a unit the same unit in another run: the study's settings, environment, agent, seed."""
    return {"rl": spec.settings(), "env_id": job.env_id, "env_kwargs": job.env_kwargs,
            "agent": job.agent.identity(), "train_seed": job.train_seed}


def unit_id(spec: RLSpec, job: TrainJob) -> str:
    return hashlib.sha256(canonical_json(unit_identity(spec, job)).encode("utf-8")).hexdigest()


def prepare_store(store: Store) -> None:
    """Add the ``rl_units`` table to ``store`` (nothing when it is there); a table written before
    the ``engine`` column existed gets it, its rows marked ``sb3`` (the one engine then)."""
    with immediate_transaction(store.connection):
        store.connection.execute(_UNITS_SCHEMA)
        columns = {row[1] for row in store.connection.execute("PRAGMA table_info(rl_units)")}
        if "engine" not in columns:
            store.connection.execute("ALTER TABLE rl_units ADD COLUMN engine TEXT NOT NULL DEFAULT 'sb3'")


def finished_units(store: Store, spec: RLSpec) -> set[str]:
    """The unit ids of ``spec`` that ``store`` holds."""
    wanted = {unit_id(spec, job) for job in spec.jobs()}
    rows = store.connection.execute("SELECT unit_id FROM rl_units").fetchall()
    return {row[0] for row in rows if row[0] in wanted}


def _cell(spec: RLSpec, job: TrainJob, step: int | None) -> Cell:
    label = f"{job.agent.label} | seed {job.train_seed}" + ("" if step is None else f" | step {step}")
    kwargs = {**unit_identity(spec, job), "evaluation": "final" if step is None else step}
    return Cell(job.env_id, dict(job.env_kwargs), MethodSpec(label, "rl-policy", kwargs), {"rl_study": spec.digest()})


def _episodes(cell: int, evaluation: Evaluation, first_seed: int) -> list[Episode]:
    episodes = []
    per = evaluation.wall_s / max(1, len(evaluation.success))
    for i, (success, phase) in enumerate(zip(evaluation.success, evaluation.phase)):
        if not success:
            raise ValueError(f"held-out episode {first_seed + i} scored no task")
        episodes.append(Episode(cell, first_seed + i, len(success), int(sum(success)), encode_success(np.array(success)),
                                encode_phase(np.array(phase)), "{}", None, per))
    return episodes


def store_unit(store: Store, spec: RLSpec, job: TrainJob, result: TrainResult) -> None:
    """Write a finished unit: its cells, then all its episodes (one transaction), then its ``rl_units`` row."""
    cells = [_cell(spec, job, None)] + [_cell(spec, job, e.step) for e in result.curve]
    ids = store.add_cells(cells)
    episodes = _episodes(ids[0], result.final, job.eval_seeds[0])
    for cell, evaluation in zip(ids[1:], result.curve):
        episodes += _episodes(cell, evaluation, job.eval_seeds[0])
    store.add_episodes(episodes)
    finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with immediate_transaction(store.connection):
        store.connection.execute(
            "INSERT OR REPLACE INTO rl_units (unit_id, study, engine, env_id, agent, train_seed, final_cell, curve, "
            "timesteps, timing, path, versions, finished_utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (unit_id(spec, job), spec.digest(), spec.engine, job.env_id, job.agent.label, job.train_seed, ids[0],
             json.dumps([[e.step, cell] for e, cell in zip(result.curve, ids[1:])]), result.timesteps,
             json.dumps(result.timing), result.path, json.dumps(result.versions), finished))


# ----------------------------------------------------------------------------- running
def _run_units(batch: Sequence[tuple[int, TrainJob]]) -> BatchResult:
    """A worker's batch: each unit trained and evaluated, as ``(index, result)``; stops at the first error."""
    outputs = []
    for index, job in batch:
        leave_if_terminating()
        try:
            outputs.append((index, train_unit(job)))
        except (Exception, SystemExit) as exc:
            error = JobError.from_exception(exc, index)
            error.job = job.describe()
            return outputs, error
    return outputs, None


@dataclass
class RunOutcome:
    """What a run did: units planned, skipped (already in the store) and trained now."""

    planned: int
    skipped: int
    trained: int
    interrupted: bool = False


def study_backend(spec: RLSpec, workers: int, address: str | None = None) -> LocalBackend | RayBackend:
    """Where the units run: Ray tasks (one CPU each) for an engine that uses Ray or when
    ``address`` names a cluster (a local Ray with ``workers`` CPUs without it), else
    ``workers`` local processes (1: this process)."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if address is not None or load_engine(spec.engine).uses_ray:
        if not ray_available():
            raise RayNotInstalled(f"engine {spec.engine!r} runs its units on Ray: pip install 'tepa-envs[clients]'")
        return RayBackend(workers, address)
    return LocalBackend(workers)


def run_study(spec: RLSpec, store: Store, *, workers: int = 1, address: str | None = None,
              progress: Callable[[int, int], None] | None = None,
              on_unit: Callable[[TrainJob], None] | None = None) -> RunOutcome:
    """Train every unit of ``spec`` that ``store`` does not hold, each written as it finishes
    (``on_unit(job)`` after each is stored). Units run where :func:`study_backend` says
    (``workers`` local processes, 1: this process; Ray tasks for the ``rllib`` engine or with
    ``address``); results do not depend on ``workers``. A unit that raises stops the run
    (:class:`~tepa_envs.agents.evaluation.engine.pool.JobError`, naming the unit) after the
    units running are stored."""
    prepare_store(store)
    jobs = spec.jobs()
    done = finished_units(store, spec)
    todo = [(i, job) for i, job in enumerate(jobs) if unit_id(spec, job) not in done]
    outcome = RunOutcome(len(jobs), len(jobs) - len(todo), 0)
    if not todo:
        return outcome
    backend = study_backend(spec, workers, address)
    batches = chunks(todo, 1)
    errors: list[JobError] = []

    def take(result: BatchResult) -> None:
        finished, error = result
        for index, unit in finished:
            store_unit(store, spec, jobs[index], unit)
            outcome.trained += 1
            if progress is not None:
                progress(outcome.trained, len(todo))
            if on_unit is not None:
                on_unit(jobs[index])
        if error is not None:
            errors.append(error)

    backend.start(_run_units, len(batches))
    try:
        outcome.interrupted = run_batches(backend, batches, take)
    finally:
        backend.close()
    if errors:
        raise min(errors, key=lambda e: e.index)
    if outcome.interrupted:
        raise KeyboardInterrupt
    return outcome


# ----------------------------------------------------------------------------- analysis
@dataclass
class UnitRecord:
    """A stored unit, read back: per held-out episode success and phase, curve, timing."""

    env: EnvSpec
    agent: str
    seed: int
    final: tuple[list[np.ndarray], list[np.ndarray]]
    curve: list[tuple[int, tuple[list[np.ndarray], list[np.ndarray]]]]
    timesteps: int
    timing: dict[str, float]
    path: str
    versions: dict[str, str]


def _read_cell(store: Store, cell: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    success, phase = [], []
    for seed, n_tasks, blob, phase_text, *_ in store.rows(cell):
        success.append(decode_success(blob, n_tasks))
        phase.append(decode_phase(phase_text, n_tasks))
    return success, phase


def read_units(store: Store, spec: RLSpec) -> list[UnitRecord]:
    """Every unit of ``spec`` in ``store``, in the spec's order; ``ValueError`` when one is missing."""
    records = []
    envs = {(e.env_id, canonical_json(e.kwargs)): e for e in spec.envs}
    for job in spec.jobs():
        row = store.connection.execute(
            "SELECT final_cell, curve, timesteps, timing, path, versions FROM rl_units WHERE unit_id = ?",
            (unit_id(spec, job),)).fetchone()
        if row is None:
            raise ValueError(f"the store holds no result for {job.describe()}: run the study first")
        final_cell, curve, timesteps, timing, path, versions = row
        points = [(int(step), _read_cell(store, int(cell))) for step, cell in json.loads(curve)]
        records.append(UnitRecord(envs[job.env_id, canonical_json(job.env_kwargs)], job.agent.label, job.train_seed,
                                  _read_cell(store, int(final_cell)), points, int(timesteps), json.loads(timing), path,
                                  json.loads(versions)))
    return records


def drift_phases(env: EnvSpec) -> tuple[tuple[str, ...], tuple[int, ...], str]:
    """The phases of ``env``, the indices scored as its drift score, and that score's name."""
    info = scenario(env.env_id) if not env.kwargs else None
    if info is None:
        made = gym.make(env.env_id, **env.kwargs)
        task_env = made.unwrapped
        made.close()
        if not isinstance(task_env, TaskEnv) or not task_env.phase_names():
            raise ValueError(f"{env.env_id} names no phases (TaskEnv.phase_names): the RL study scores "
                             "success per phase and in the drift phases")
        names, reversal = task_env.phase_names(), task_env.reversal_phases()
    else:
        names, reversal = info.phases, info.reversal_phases
    if reversal:
        return names, tuple(names.index(p) for p in reversal), "reversal"
    return names, tuple(range(1, len(names))), "after first change"


def _phase_means(evaluation: tuple[list[np.ndarray], list[np.ndarray]], n_phases: int,
                 drift: tuple[int, ...]) -> np.ndarray:
    """Per phase, overall and drift score: mean over episodes of each episode's mean (NaN when absent)."""
    out = np.full((len(evaluation[0]), n_phases + 2), np.nan)
    for row, (success, phase) in enumerate(zip(*evaluation)):
        for p in range(n_phases):
            mask = phase == p
            if mask.any():
                out[row, p] = success[mask].mean()
        out[row, n_phases] = success.mean()
        mask = np.isin(phase, drift)
        out[row, n_phases + 1] = success[mask].mean() if mask.any() else np.nan
    return np.nanmean(out, axis=0) if len(out) else out


def _estimate(values: np.ndarray) -> dict[str, float]:
    (est,) = bootstrap_cis(np.asarray(values, dtype=float)[:, None])
    return {"mean": est.mean, "ci_low": est.ci_low, "ci_high": est.ci_high}


def analyse(spec: RLSpec, records: Sequence[UnitRecord]) -> dict[str, Any]:
    """The ``rl.json`` dict of a finished study (see :mod:`.rl_outputs` for the layout)."""
    seeds = list(spec.train_seeds)
    labels = [a.label for a in spec.agents]
    by_key = {(r.env.name, r.agent, r.seed): r for r in records}
    envs_out, comparisons = [], []
    for env in spec.envs:
        names, drift, drift_name = drift_phases(env)
        columns = [*names, "overall", "drift"]
        entry: dict[str, Any] = {"env_id": env.env_id, "label": env.name, "kwargs": env.kwargs, "phases": list(names),
                                 "drift_phases": [names[i] for i in drift], "drift_score": drift_name, "agents": {}}
        per_seed_drift: dict[str, np.ndarray] = {}
        for label in labels:
            units = [by_key[env.name, label, s] for s in seeds]
            final = np.stack([_phase_means(u.final, len(names), drift) for u in units])
            steps = [p[0] for p in units[0].curve] + [units[0].timesteps]
            curve = np.array([[_phase_means(ev, len(names), drift)[-1] for _, ev in u.curve]
                              + [final[k, -1]] for k, u in enumerate(units)])
            reach = np.array([_steps_to(curve[k], steps, 0.9 * final[k, -1]) for k in range(len(units))], dtype=float)
            per_seed_drift[label] = final[:, -1]
            timing = {key: float(np.mean([u.timing[key] for u in units])) for key in units[0].timing}
            timing["env_steps_per_s"] = float(np.mean([u.timesteps / max(u.timing["env_s"], 1e-9) for u in units]))
            timing["train_steps_per_s"] = float(np.mean(
                [u.timesteps / max(u.timing["env_s"] + u.timing["policy_s"] + u.timing["update_s"], 1e-9)
                 for u in units]))
            entry["agents"][label] = {
                "success": {c: _estimate(final[:, j]) for j, c in enumerate(columns) if not np.isnan(final[:, j]).any()},
                "per_seed_drift": [float(v) for v in final[:, -1]],
                "curve": {"steps": [int(s) for s in steps],
                          "mean": [float(v) for v in curve.mean(axis=0)],
                          "ci_low": [_estimate(curve[:, j])["ci_low"] for j in range(curve.shape[1])],
                          "ci_high": [_estimate(curve[:, j])["ci_high"] for j in range(curve.shape[1])]},
                "steps_to_90": _estimate(reach),
                "timing": timing, "path": units[0].path,
            }
        for label in labels:
            others = [BASELINE] if label != BASELINE else []
            agent = next(a for a in spec.agents if a.label == label)
            if agent.memory is not None and LEARNED_MEMORY in labels:
                others.append(LEARNED_MEMORY)
            for other in others:
                if other in labels and other != label:
                    diff = per_seed_drift[label] - per_seed_drift[other]
                    comparisons.append({"env": env.name, "agent": label, "other": other, "metric": "drift",
                                        "diff": _estimate(diff), "values": diff})
        envs_out.append(entry)
    if comparisons:
        diffs = np.stack([c.pop("values") for c in comparisons], axis=1)
        tests = paired_permutation_tests(diffs)
        holm = holm_bonferroni([t.p_value for t in tests])
        for c, t, h in zip(comparisons, tests, holm):
            c.update(p_value=t.p_value, p_holm=float(h), significant=bool(h < spec.alpha))
    versions = records[0].versions if records else {}
    return {"rl_version": RL_VERSION, "spec": spec.to_json(), "notes": list(spec.notes), "agents": labels,
            "oracles": [a.label for a in spec.agents if a.oracle],
            "twins": [a.label for a in spec.agents if a.twin],
            "memory_agents": [a.label for a in spec.agents if a.memory is not None and not a.oracle and not a.twin],
            "train_seeds": seeds,
            "unit_s": float(sum(r.timing["total_s"] for r in records)),
            "smallest_p_value": smallest_p_value(len(seeds)), "alpha": spec.alpha, "versions": versions,
            "envs": envs_out, "comparisons": comparisons}


def _steps_to(curve: np.ndarray, steps: Sequence[int], target: float) -> int:
    """The first step whose curve value reaches ``target`` (the last step when none does)."""
    for value, step in zip(curve, steps):
        if value >= target - 1e-12:
            return int(step)
    return int(steps[-1])


__all__ = ["AGENTS", "ENVS", "SIZES", "EnvSpec", "RLSpec", "RunOutcome", "UnitRecord", "analyse", "builtin_spec",
           "drift_phases", "finished_units", "load_rl_spec", "parse_rl_spec", "prepare_store", "read_units",
           "run_study", "store_unit", "unit_id"]
