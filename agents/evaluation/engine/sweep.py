"""Sweeps: run a spec's cells × seeds into a results store, resumably, and read groups back.

:func:`execute` runs every episode of a :class:`~.spec.SweepSpec` that the store
does not hold yet, in batches on a backend (:mod:`.backends`) through the one
executor (:func:`~.executor.run_batches`), committing each batch's episodes as it
arrives; a rerun skips what is stored, so a killed sweep resumes where it stopped
and ends with the same rows as one never interrupted. ``tepa-bench run`` itself
runs through :func:`evaluate_through_store`, so both paths share this code. Every
episode records its drift metrics (the store's ``detection`` column,
:func:`run_episode_job`). :func:`store_groups` and :func:`summarize_group` read a
store's groups back; :mod:`~tepa_envs.agents.evaluation.outputs.store_report`
writes them as report files.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from tepa_envs.agents.evaluation.analysis.evaluation import Evaluation
from tepa_envs.agents.evaluation.analysis.results import Summary
from tepa_envs.agents.evaluation.analysis.settings import settings_for
from tepa_envs.agents.evaluation.analysis.summary import summarize
from tepa_envs.agents.evaluation.engine.backends import LocalBackend, RayBackend, chunks, default_batch_size
from tepa_envs.agents.evaluation.engine.executor import BatchResult, run_batches
from tepa_envs.agents.evaluation.engine.jobs import Job
from tepa_envs.agents.evaluation.engine.pool import JobError, leave_if_terminating
from tepa_envs.agents.evaluation.engine.progress import Progress, progress_mode
from tepa_envs.agents.evaluation.engine.runner import run_job_with_metrics
from tepa_envs.agents.evaluation.engine.spec import Statistics, SweepSpec
from tepa_envs.agents.evaluation.engine.store import (
    Episode,
    Store,
    StoredCell,
    encode_phase,
    encode_success,
)

CellJob = tuple[int, Job]
"""One episode for a worker: the store's ``cells.id`` of its cell, and its job."""


# ------------------------------------------------------------------ in the workers
def run_episode_job(cell_job: CellJob) -> Episode:
    """One episode of one cell, timed; the engine's own :func:`~.runner.run_job_with_metrics`
    (success, phases and trials are :func:`~.runner.run_job`'s; the drift metrics go
    into the ``detection`` column, ``NULL`` where they do not apply)."""
    cell, job = cell_job
    started = time.perf_counter()
    success, phase, trials, detection = run_job_with_metrics(job)
    wall = time.perf_counter() - started
    return Episode(cell, job.seed, int(success.size), int(success.sum()), encode_success(success),
                   encode_phase(phase), json.dumps({k: int(v) for k, v in sorted(trials.items())}),
                   None if detection is None else json.dumps(detection, sort_keys=True), wall)


def run_batch(cell_jobs: Sequence[CellJob]) -> tuple[list[Episode], JobError | None]:
    """Run a batch of episodes; the ones that finished and, if one raised, its
    :class:`JobError` (returned, not raised: it crosses any backend unwrapped)."""
    done: list[Episode] = []
    for cell_job in cell_jobs:
        leave_if_terminating()  # a pool worker whose driver died leaves between episodes
        try:
            done.append(run_episode_job(cell_job))
        except (Exception, SystemExit) as exc:  # SystemExit: a user's method calling exit()
            job = cell_job[1]
            error = JobError.from_exception(exc)
            error.job = f"{job.describe()}, {job.env_id} {json.dumps(job.env_kwargs)}"
            return done, error
    return done, None


# ------------------------------------------------------------------ in the driver
@dataclass
class SweepOutcome:
    """What :func:`execute` did: episodes of the spec, found already stored, run now."""

    total: int
    already: int
    ran: int
    interrupted: bool
    elapsed_s: float
    backend: str = ""
    startup_s: float = 0.0  # starting the backend (a local Ray's start-up, a pool's first fork)

    @property
    def rate(self) -> float:
        """Episodes per second run now, the backend's start-up excluded."""
        running = self.elapsed_s - self.startup_s
        return self.ran / running if running > 0 else math.nan


def plan(store: Store, spec: SweepSpec) -> tuple[list[int], list[CellJob], int]:
    """The cells' store ids, the episodes still to run (seed by seed, so an
    interrupted sweep has every method on its first seeds; each cell's settings
    resolved once), and how many are stored."""
    ids = store.add_cells(spec.cells)
    done = store.finished(ids)
    settings = {env_id: settings_for(env_id) for env_id in dict.fromkeys(cell.env_id for cell in spec.cells)}
    jobs = [(ids[i], Job.resolve(cell.env_id, cell.method, seed, env_kwargs=cell.env_kwargs,
                                 reader_kwargs=cell.reader_kwargs, settings=settings[cell.env_id]))
            for seed in spec.seeds for i, cell in enumerate(spec.cells) if (ids[i], seed) not in done]
    return ids, jobs, spec.episodes - len(jobs)


def execute(store: Store, spec: SweepSpec, backend: LocalBackend | RayBackend, *, progress: bool = False,
            batch_size: int | None = None, command: Sequence[str] = (), label: str = "sweep",
            on_start: Callable[[str, int, int], None] | None = None) -> SweepOutcome:
    """Run the episodes of ``spec`` that ``store`` lacks on ``backend``, committing each
    batch as it arrives. Ctrl-C stops cleanly: batches not started are cancelled, those
    running are awaited and stored (a second Ctrl-C stops waiting), and the outcome says
    ``interrupted``. A job's exception is raised as :class:`JobError` after the batch's
    finished episodes are stored."""
    started = time.perf_counter()
    store.add_sweep(spec, list(command))
    ids, jobs, already = plan(store, spec)
    outcome = SweepOutcome(spec.episodes, already, 0, False, 0.0)
    store.code_version()  # looked up once, before any worker exists
    if not jobs:
        outcome.elapsed_s = time.perf_counter() - started
        return outcome
    before_start = time.perf_counter()
    if isinstance(backend, RayBackend):
        backend.start(run_batch, 0)
        batches = chunks(jobs, batch_size or default_batch_size(backend, len(jobs)))
    else:
        batches = chunks(jobs, batch_size or default_batch_size(backend, len(jobs)))
        backend.start(run_batch, len(batches))
    outcome.startup_s = time.perf_counter() - before_start
    outcome.backend = backend.describe()
    if on_start is not None:
        on_start(outcome.backend, len(jobs), already)
    bar = Progress(label, progress_mode(quiet=not progress), initial=already, total=spec.episodes)
    errors: list[JobError] = []

    def take(result: BatchResult) -> None:
        episodes, failure = result
        outcome.ran += store.add_episodes(episodes)
        bar.update(len(episodes))
        if failure is not None:
            errors.append(failure)

    try:
        outcome.interrupted = run_batches(backend, batches, take)
        if outcome.interrupted:
            # counted from the store: a Ctrl-C may land after a batch's COMMIT, before it was counted
            seeds = set(spec.seeds)
            outcome.ran = sum(1 for _, seed in store.finished(ids) if seed in seeds) - already
    finally:
        bar.close()
        backend.close()
    outcome.elapsed_s = time.perf_counter() - started
    if errors:
        raise errors[0]
    return outcome


# ------------------------------------------------------------------ run: one group through a store
def evaluate_through_store(store: Store, spec: SweepSpec, backend: LocalBackend | RayBackend, *,
                           progress: bool = False, command: Sequence[str] = ()) -> Evaluation:
    """``tepa-bench run``: execute a one-group spec in ``store`` and read its
    :class:`~tepa_envs.agents.evaluation.analysis.evaluation.Evaluation` back (``elapsed_s``: this call's wall time).
    ``KeyboardInterrupt`` when interrupted."""
    started = time.perf_counter()
    outcome = execute(store, spec, backend, progress=progress, command=command, label="run")
    if outcome.interrupted:
        raise KeyboardInterrupt
    ids = store.add_cells(spec.cells)
    first = spec.cells[0]
    evaluation = store.evaluation(first.env_id, first.env_kwargs, first.reader_kwargs,
                                  list(zip(ids, (c.label for c in spec.cells))), list(spec.seeds))
    evaluation.elapsed_s = time.perf_counter() - started
    return evaluation


# ------------------------------------------------------------------ groups of a store
@dataclass
class GroupReport:
    """One group of a store: its cells, the seeds every one of them finished, its directory."""

    group_id: str
    cells: list[StoredCell]
    seeds: list[int]
    left_out: int
    directory: str = ""

    @property
    def env_id(self) -> str:
        return self.cells[0].env_id

    @property
    def env_kwargs(self) -> dict[str, Any]:
        return self.cells[0].env_kwargs

    @property
    def reader_kwargs(self) -> dict[str, Any]:
        return self.cells[0].reader_kwargs


def store_groups(store: Store) -> list[GroupReport]:
    """Every group of the store with the seeds finished by all of its cells (the
    comparisons are paired by seed) and the number of episodes that leaves out."""
    reports = []
    for group_id, cells in store.groups().items():
        per_cell = [set(store.seeds_of(c.id)) for c in cells]
        common = sorted(set.intersection(*per_cell)) if per_cell else []
        left_out = sum(len(s) for s in per_cell) - len(common) * len(cells)
        reports.append(GroupReport(group_id, cells, common, left_out))
    return reports


def summarize_group(store: Store, group: GroupReport, statistics: Statistics) -> Summary:
    labels = [c.label for c in group.cells]
    evaluation = store.evaluation(group.env_id, group.env_kwargs, group.reader_kwargs,
                                  [(c.id, c.label) for c in group.cells], group.seeds)
    assert list(evaluation.runs) == labels
    return summarize(evaluation, baselines=statistics.baselines, alpha=statistics.alpha, n_perm=statistics.n_perm)


def describe_cells(spec: SweepSpec, store: Store | None) -> list[str]:
    """``--dry-run``: one line per cell (id, env, kwargs, method, reader kwargs, seeds stored)."""
    by_id = {c.cell_id: c.id for c in store.cells()} if store is not None else {}
    seeds = set(spec.seeds)
    lines = []
    for cell in spec.cells:
        done = len(seeds & set(store.seeds_of(by_id[cell.cell_id]))) if store is not None and cell.cell_id in by_id \
            else 0
        lines.append(f"{cell.cell_id[:12]}  {cell.env_id}  {json.dumps(cell.env_kwargs)}  {cell.label}  "
                     f"reader {json.dumps(cell.reader_kwargs)}  {done}/{len(spec.seeds)} stored")
    return lines


def stored_episodes(spec: SweepSpec, store: Store | None) -> int:
    """How many of the spec's episodes ``store`` already holds."""
    if store is None:
        return 0
    by_id = {c.cell_id: c.id for c in store.cells()}
    seeds = set(spec.seeds)
    return sum(len(seeds & set(store.seeds_of(by_id[c.cell_id]))) for c in spec.cells if c.cell_id in by_id)


def format_rate(outcome: SweepOutcome) -> str:
    startup = f", after {outcome.startup_s:.1f}s of start-up" if outcome.startup_s >= 0.05 else ""
    return f"{outcome.ran:,} episodes in {outcome.elapsed_s:.1f}s ({outcome.rate:.1f} episodes/s{startup})"


def cleanup_temp_stores(directory: Path) -> None:
    """Remove the temporary stores of ``tepa-bench run`` processes that are gone (killed)."""
    for path in Path(directory).glob(".tepa-run-*.db*"):
        try:
            pid = int(path.name.split("-")[2])
        except (IndexError, ValueError):
            continue
        try:
            os.kill(pid, 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            path.unlink()
        except OSError:
            pass


__all__ = ["CellJob", "GroupReport", "SweepOutcome", "cleanup_temp_stores", "describe_cells", "evaluate_through_store",
           "execute", "format_rate", "plan", "run_batch", "run_episode_job", "store_groups", "stored_episodes",
           "summarize_group"]
