"""Methods × seeds evaluation with paired statistics per phase.

Each (method, seed) episode is an independent job, so the numbers do not depend
on how many worker processes run them.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import multiprocessing.util
import os
import signal
import sys
import sysconfig
import threading
import time
import traceback
import weakref
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

import tepa_envs  # noqa: F401  (registers the environments)

from tepa_envs.agents.readers.agent import MemoryAgent, run_episode
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.task_access import task_access
from tepa_envs.agents.evaluation.results import Comparison, MethodSummary, PhaseEstimate, Summary
from tepa_envs.agents.evaluation.settings import settings_for
from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.evaluation.statistics import (
    DEFAULT_N_PERM, bootstrap_cis, holm_bonferroni, memory_pollution_index, paired_permutation_tests,
)

Progress = Callable[[int, int], None]


@dataclass
class MethodRuns:
    """Per-seed, per-task success of one method."""

    name: str
    success: np.ndarray  # (n_seeds, n_tasks) bool
    trials: list[dict[str, int]] = field(default_factory=list)


@dataclass
class Evaluation:
    env_id: str
    env_kwargs: dict[str, Any]
    reader_kwargs: dict[str, Any]
    seeds: list[int]
    phase: np.ndarray  # (n_tasks,) phase index of every task
    runs: dict[str, MethodRuns]
    elapsed_s: float = 0.0

    @property
    def methods(self) -> list[str]:
        return list(self.runs)

    def phase_success(self, method: str, phase: int | None) -> np.ndarray:
        """Per-seed success over the tasks of ``phase`` (``None``: all tasks)."""
        success = self.runs[method].success
        mask = np.ones(self.phase.size, bool) if phase is None else self.phase == phase
        return success[:, mask].mean(axis=1)


def check_env_id(env_id: str) -> None:
    if env_id not in gym.envs.registry:
        tepa_ids = sorted(i for i in gym.envs.registry if i.startswith("TEPA/"))
        raise ValueError(f"unknown environment {env_id!r}; registered TEPA environments: {', '.join(tepa_ids)}")


@dataclass(frozen=True)
class MethodSpec:
    """A method run under its own label with extra constructor arguments, e.g. an
    ablation: ``MethodSpec("tepa failed=count", "tepa", {"failed_candidate": "count"})``."""

    label: str
    spec: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label:
            raise TypeError(f"label must be a non-empty str, got {self.label!r}")
        if not isinstance(self.spec, str):
            raise TypeError(f"spec must be a method name or import path (str), got {type(self.spec).__name__}")
        if not isinstance(self.kwargs, dict):
            raise TypeError(f"kwargs must be a dict, got {type(self.kwargs).__name__}")


def method_label(method: str | MethodSpec) -> str:
    """The name a method's results are reported under."""
    return method.label if isinstance(method, MethodSpec) else method


def make_agent(env_id: str, method: str | MethodSpec | Memory,
               reader_kwargs: dict[str, Any] | None = None) -> MemoryAgent:
    """The agent the harness runs for ``method`` on ``env_id``: the settings
    table's reader (with ``reader_kwargs`` applied, the same for every method),
    method arguments and reading strategy."""
    settings = settings_for(env_id)
    try:
        reader = EvidenceReader(**{**settings.reader_kwargs, **(reader_kwargs or {})})
    except TypeError as exc:
        raise TypeError(f"bad reader kwargs {reader_kwargs}: {exc}; valid: follow_prob, stated_prob, seed") from None
    if isinstance(method, MethodSpec):
        memory = make_memory(method.spec, **{**settings.kwargs_for(method.spec), **method.kwargs})
    else:
        memory = make_memory(method, **settings.kwargs_for(method))
    return MemoryAgent(memory, reader, reading=settings.reading)


def run_job(job: tuple[str, dict[str, Any], str | MethodSpec, int, dict[str, Any]]
            ) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """One (method, seed) episode: per-task success, phases and trials spent."""
    env_id, env_kwargs, method, seed, reader_kwargs = job
    env = gym.make(env_id, **env_kwargs)
    try:
        agent = make_agent(env_id, method, reader_kwargs)
        result = run_episode(env, agent, seed, decide_phases=settings_for(env_id).decide_phases)
    finally:
        env.close()
    return result.success, result.phase, result.trials


def check_method(method: object) -> None:
    """``TypeError`` unless ``method`` is a name, an import path or a :class:`MethodSpec`."""
    if isinstance(method, (str, MethodSpec)):
        return
    if isinstance(method, type):
        raise TypeError(f"methods must be names, import paths or MethodSpec; got the class {method.__qualname__} "
                        f"— pass '{method.__module__}:{method.__qualname__}'")
    raise TypeError(f"methods must be names, import paths or MethodSpec; got {type(method).__name__} {method!r:.60}")


def validate_methods(env_id: str, env_kwargs: dict[str, Any], methods: Sequence[str | MethodSpec],
                     reader_kwargs: dict[str, Any] | None = None) -> None:
    """Fail fast, before any process starts, on an unknown method, bad kwargs, or an
    environment without the task contract (:class:`~tepa_envs.core.contracts.TaskEnv`)."""
    check_env_id(env_id)
    if isinstance(methods, (str, MethodSpec)):
        raise TypeError(f"methods must be a list of names, import paths or MethodSpec, got {methods!r}")
    if not methods:
        raise ValueError("no methods given")
    for method in methods:
        check_method(method)
    labels = [method_label(m) for m in methods]
    if len(set(labels)) != len(labels):
        raise ValueError(f"methods listed twice: {', '.join(sorted(m for m in labels if labels.count(m) > 1))}")
    env = gym.make(env_id, **env_kwargs)
    try:
        task_access(env)
    except TypeError as exc:
        raise TypeError(f"{env_id} cannot be evaluated: {exc}") from None
    finally:
        env.close()
    for method in methods:
        make_agent(env_id, method, reader_kwargs)


# ----------------------------------------------------------------- errors raised by jobs
_STDLIB_DIRS = tuple({os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})
_SITE_DIRS = tuple({os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("purelib", "platlib")})


def _own_dirs() -> tuple[str, ...]:
    """The directories this package's loaded modules live in (an editable install maps several)."""
    files = [getattr(module, "__file__", None) for name, module in list(sys.modules.items())
             if name.partition(".")[0] == "tepa_envs"]
    dirs = {os.path.realpath(os.path.dirname(f)) + os.sep for f in files if isinstance(f, str)}
    return tuple(sorted(dirs))


def _innermost_user_frame(exc: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of ``exc``'s traceback in the user's code: outside the
    standard library, installed packages and this package; failing that, outside the
    standard library and this package, then outside the standard library, then the innermost."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    own = _own_dirs()
    paths = [os.path.realpath(f.filename) for f in frames]
    for excluded in (_STDLIB_DIRS + _SITE_DIRS + own, _STDLIB_DIRS + own, _STDLIB_DIRS):
        for frame, path in zip(reversed(frames), reversed(paths)):
            if not path.startswith(excluded) and not frame.filename.startswith("<frozen"):
                return frame
    return frames[-1]


def _short_path(filename: str) -> str:
    try:
        rel = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if rel.startswith(os.pardir) else rel


class JobError(RuntimeError):
    """A job of :func:`run_jobs` raised: the exception's type and message, the innermost
    frame of the code that raised it (``file:line``), and the job. Picklable, so it
    crosses from a worker process intact; ``traceback_text`` holds the full traceback.
    ``str()`` is one line."""

    def __init__(self, exc_type: str, message: str, location: str, index: int = -1, job: str = "",
                 traceback_text: str = "") -> None:
        super().__init__(exc_type, message, location, index, job, traceback_text)
        self.exc_type, self.message, self.location = exc_type, message, location
        self.index, self.job, self.traceback_text = index, job, traceback_text

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.exc_type, self.message, self.location, self.index, self.job,
                             self.traceback_text))

    @classmethod
    def from_exception(cls, exc: BaseException, index: int = -1) -> "JobError":
        frame = _innermost_user_frame(exc)
        location = f"{_short_path(frame.filename)}:{frame.lineno} in {frame.name}" if frame else "unknown location"
        message = " ".join(str(exc).split())
        return cls(type(exc).__qualname__, message, location, index, "",
                   "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))

    def __str__(self) -> str:
        text = f"{self.exc_type}: {self.message}" if self.message else self.exc_type
        return f"{text} (at {self.location}{'; ' + self.job if self.job else ''})"


# ------------------------------------------------------------------- pool worker lifecycle
class _Terminated(SystemExit):
    """Raised in an idle worker's main thread by SIGTERM (its parent died, or it was told to stop)."""


_PR_SET_PDEATHSIG = 1
_TERMINATION_GRACE_S = 3.0
"""How long a job running when SIGTERM arrives may take to finish before the worker leaves anyway."""
_worker_state: dict[str, Any] = {"in_pool": False, "in_job": False, "terminating": None,
                                 "inherited": frozenset(), "cleanup": threading.Lock()}


def _worker_cleanup() -> None:
    """Run what a normal interpreter exit would run for this worker: its own ``atexit``
    handlers and the ``weakref.finalize`` finalizers it created (e.g. FileOps sandboxes);
    never the parent's, which were inherited by ``fork``. Runs once."""
    if not _worker_state["cleanup"].acquire(blocking=False):
        return
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is not None:
        run_exitfuncs()
    registry = getattr(weakref.finalize, "_registry", {})
    for finalizer in list(registry):
        if finalizer not in _worker_state["inherited"] and finalizer.atexit:
            try:
                finalizer()
            except Exception:  # pragma: no cover - a finalizer's own failure must not stop the others
                pass


def _exit_worker(code: int = 128 + signal.SIGTERM) -> None:
    _worker_cleanup()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # pragma: no cover
            pass
    os._exit(code)


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM in a pool worker: an idle worker leaves at once (``SystemExit`` unwinds
    it, then :func:`_worker_cleanup` runs as a multiprocessing finalizer); a running
    job is left to finish, so no environment or sandbox is cut off half-way, and the
    worker leaves right after it (:func:`_call_job`), or after a grace period."""
    if _worker_state["terminating"] is None:
        _worker_state["terminating"] = time.monotonic()
    if not _worker_state["in_job"]:
        raise _Terminated(128 + signum)


def _watch_parent(parent_pid: int) -> None:
    """Portable fallback of PR_SET_PDEATHSIG: when the parent is gone, SIGTERM this
    worker; when it is still here a grace period after a SIGTERM (a job that does not
    end), clean up and leave anyway."""
    signalled = False
    while True:
        time.sleep(0.1)
        since = _worker_state["terminating"]
        if since is not None and time.monotonic() - since > _TERMINATION_GRACE_S:
            _exit_worker()
        if not signalled and os.getppid() != parent_pid:
            signalled = True
            os.kill(os.getpid(), signal.SIGTERM)


def _worker_init(parent_pid: int) -> None:
    """Pool initializer: exit promptly, and cleanly, when the parent dies.

    Linux: ``prctl(PR_SET_PDEATHSIG, SIGTERM)``; everywhere: a daemon thread polling
    ``os.getppid()``. On SIGTERM the worker finishes the job it is running (if any),
    runs its own exit handlers and finalizers, and leaves."""
    if hasattr(atexit, "_clear") and multiprocessing.get_start_method(allow_none=True) in (None, "fork"):
        atexit._clear()  # the parent's handlers: a forked worker never runs them (it leaves by os._exit)
    _worker_state.update(in_pool=True, in_job=False, terminating=None, cleanup=threading.Lock(),
                         inherited=frozenset(getattr(weakref.finalize, "_registry", {})))
    signal.signal(signal.SIGTERM, _on_sigterm)
    multiprocessing.util.Finalize(None, _worker_cleanup, exitpriority=100)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the thread below covers it
            pass
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="tepa-watch-parent", daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _call_job(worker: Callable[[Any], Any], item: tuple[int, Any]) -> Any:
    """Run one job; its exception becomes a :class:`JobError`. A pool worker told to
    stop (SIGTERM) leaves here, between jobs."""
    index, job = item
    in_pool = _worker_state["in_pool"]
    if in_pool and _worker_state["terminating"] is not None:
        _exit_worker()
    _worker_state["in_job"] = in_pool
    try:
        return worker(job)
    except (Exception, SystemExit) as exc:  # SystemExit: user code calling exit() must not end the run silently
        raise JobError.from_exception(exc, index) from exc
    finally:
        _worker_state["in_job"] = False
        if in_pool and _worker_state["terminating"] is not None:
            _exit_worker()


def run_jobs(jobs: Sequence[Any], worker: Callable[[Any], Any], workers: int,
             progress: Progress | None = None, describe: Callable[[Any], str] | None = None) -> list[Any]:
    """``worker`` over ``jobs`` in order, in this process or a pool of at most ``workers``
    processes (never more than there are jobs); results do not depend on the number of workers.

    An exception a job raises comes out as :class:`JobError` (``describe(job)`` names
    the job in it); the jobs not yet started are cancelled. Pool workers exit when
    this process dies, even by ``kill -9``."""
    jobs = list(jobs)
    workers = max(1, min(workers, len(jobs)))
    call = functools.partial(_call_job, worker)
    outputs: list[Any] = []
    try:
        if workers == 1:
            for i, job in enumerate(jobs):
                outputs.append(call((i, job)))
                if progress:
                    progress(i + 1, len(jobs))
            return outputs
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init, initargs=(os.getpid(),))
        try:
            chunk = max(1, len(jobs) // (workers * 8))
            for i, out in enumerate(pool.map(call, enumerate(jobs), chunksize=chunk)):
                outputs.append(out)
                if progress:
                    progress(i + 1, len(jobs))
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return outputs
    except JobError as exc:
        if describe is not None and 0 <= exc.index < len(jobs) and not exc.job:
            exc.job = describe(jobs[exc.index])
        raise


def describe_job(job: tuple[str, dict[str, Any], str | MethodSpec, int, dict[str, Any]]) -> str:
    """``method M, seed S`` for a :func:`run_job` job."""
    return f"method {method_label(job[2])}, seed {job[3]}"


def evaluate(env_id: str, methods: Sequence[str | MethodSpec], seeds: Sequence[int], *,
             env_kwargs: dict[str, Any] | None = None, workers: int = 1,
             progress: Progress | None = None, reader_kwargs: dict[str, Any] | None = None) -> Evaluation:
    """Run every method on every seed of ``env_id``.

    ``reader_kwargs`` override the reader of the environment's settings for every
    method alike (e.g. ``{"follow_prob": 0.99}`` for a sensitivity analysis).
    """
    env_kwargs = dict(env_kwargs or {})
    reader_kwargs = dict(reader_kwargs or {})
    if isinstance(methods, (str, MethodSpec)):
        raise TypeError(f"methods must be a list of names, import paths or MethodSpec, got {methods!r}")
    methods = list(methods)
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("need at least one seed")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    validate_methods(env_id, env_kwargs, methods, reader_kwargs)
    jobs = [(env_id, env_kwargs, m, s, reader_kwargs) for m in methods for s in seeds]
    started = time.perf_counter()
    outputs = run_jobs(jobs, run_job, workers, progress, describe=describe_job)
    runs: dict[str, MethodRuns] = {}
    phase = outputs[0][1]
    for m_index, method in enumerate(methods):
        block = outputs[m_index * len(seeds):(m_index + 1) * len(seeds)]
        label = method_label(method)
        runs[label] = MethodRuns(label, np.stack([b[0] for b in block]), [b[2] for b in block])
    return Evaluation(env_id, env_kwargs, reader_kwargs, seeds, phase, runs, time.perf_counter() - started)


def summarize(evaluation: Evaluation, *, baselines: Sequence[str] = ("append-only", "no-memory"),
              phase_names: Sequence[str] | None = None, alpha: float = 0.05,
              n_perm: int = DEFAULT_N_PERM) -> Summary:
    """Per-phase success with CIs, MPI, trial budgets and Holm-corrected paired comparisons.

    Comparisons are method minus baseline per seed (row ``i`` of both methods'
    success is seed ``evaluation.seeds[i]``): the mean difference with a 95%
    bootstrap CI, a two-sided paired sign-flip test (exact up to 16 seeds, else
    ``n_perm`` Monte Carlo sign patterns; ``p_at_floor`` when none was as
    extreme), Holm–Bonferroni corrected over the whole family, and
    ``significant = p_holm < alpha``. See ``statistics.py`` for the definitions.
    ``Summary.to_json()`` is the ``results.json`` layout (docs/results_schema.md).
    """
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if isinstance(n_perm, bool) or not isinstance(n_perm, int) or n_perm < 1:
        raise ValueError(f"n_perm must be a positive int, got {n_perm!r}")
    if phase_names is None:
        phase_names = settings_for(evaluation.env_id).phase_names
    phases: list[tuple[str, int | None]] = [
        (name, i) for i, name in enumerate(phase_names) if np.any(evaluation.phase == i)
    ] + [("overall", None)]
    per_seed = {(method, name): evaluation.phase_success(method, index)
                for method in evaluation.methods for name, index in phases}
    cells = list(per_seed)
    pairs = [(method, baseline, name) for baseline in baselines if baseline in evaluation.runs
             for method in evaluation.methods if method != baseline for name, _ in phases]
    diffs = np.column_stack([per_seed[method, name] - per_seed[baseline, name] for method, baseline, name in pairs]
                            ) if pairs else np.empty((len(evaluation.seeds), 0))
    # one bootstrap over every success series and every paired difference, sharing the resamples
    cis = bootstrap_cis(np.column_stack([per_seed[cell] for cell in cells] + ([diffs] if pairs else [])))
    estimates = dict(zip(cells, cis))
    mpi: dict[tuple[str, str], float | None] = {cell: None for cell in cells}
    if "no-memory" in evaluation.runs:
        for method, name in cells:
            mpi[method, name] = memory_pollution_index(estimates["no-memory", name].mean,
                                                       estimates[method, name].mean)
    comparisons: list[Comparison] = []
    if pairs:
        tests = paired_permutation_tests(diffs, n_perm=n_perm, alternative="two-sided")
        adjusted = holm_bonferroni([test.p_value for test in tests])
        for (method, baseline, name), est, test, p_holm in zip(pairs, cis[len(cells):], tests, adjusted):
            comparisons.append(Comparison(method, baseline, name, est.mean, est.ci_low, est.ci_high,
                                          test.p_value, float(p_holm), bool(p_holm < alpha), test.at_floor))
    trials = {}
    for method, run in evaluation.runs.items():
        kinds = sorted({k for t in run.trials for k in t})
        trials[method] = {k: float(np.mean([t.get(k, 0) for t in run.trials])) for k in kinds}
        trials[method]["total"] = float(np.mean([sum(t.values()) for t in run.trials]))
    return Summary(
        env_id=evaluation.env_id,
        env_kwargs=evaluation.env_kwargs,
        reader_kwargs=evaluation.reader_kwargs,
        seeds=tuple(evaluation.seeds),
        methods=tuple(evaluation.methods),
        phases=tuple(name for name, _ in phases),
        phase_of_task=tuple(evaluation.phase.tolist()),
        estimates={method: MethodSummary(method, {
            name: PhaseEstimate(estimates[method, name].mean, estimates[method, name].ci_low,
                                estimates[method, name].ci_high, mpi[method, name])
            for name, _ in phases}) for method in evaluation.methods},
        comparisons=tuple(comparisons),
        trials_per_episode=trials,
        per_task_success={m: tuple(r.success.mean(axis=0).tolist()) for m, r in evaluation.runs.items()},
        elapsed_s=evaluation.elapsed_s,
        alpha=float(alpha),
        n_perm=n_perm,
    )
