"""Worker processes and job errors: workers that die with their parent and clean up on
SIGTERM, and a user's error inside a job reported as one line (:class:`JobError`).

The executor (:mod:`~tepa_envs.agents.evaluation.engine.executor`) runs jobs on a
backend (:mod:`~tepa_envs.agents.evaluation.engine.backends`) whose local pool
starts its workers with :func:`_sweep_worker_init`; each job runs through :func:`_call_job`."""

from __future__ import annotations

from tepa_envs.error import TepaError
import atexit
import ctypes
import multiprocessing.util
import os
import signal
import sys
import sysconfig
import threading
import time
import traceback
import weakref
from typing import Any, Callable


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


class JobError(TepaError, RuntimeError):
    """A job raised: the exception's type and message, the innermost
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


def leave_if_terminating() -> None:
    """Between two units of a long job (a sweep's batch of episodes): a pool worker told
    to stop (SIGTERM, its parent gone) leaves here, cleaning up, instead of after the
    whole job; a no-op outside a pool worker."""
    if _worker_state["in_pool"] and _worker_state["terminating"] is not None:
        _exit_worker()


def _sweep_worker_init(parent_pid: int) -> None:
    """Initializer of a sweep's pool workers: :func:`_worker_init`, and Ctrl-C (SIGINT,
    sent to the whole foreground process group) left to the driver, which stops the
    sweep cleanly: a worker finishes the batch it is running instead of dying in it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_init(parent_pid)


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
    except JobError:  # already one line naming its job (a sweep's batch of episodes)
        raise
    except (Exception, SystemExit) as exc:  # SystemExit: user code calling exit() must not end the run silently
        raise JobError.from_exception(exc, index) from exc
    finally:
        _worker_state["in_job"] = False
        if in_pool and _worker_state["terminating"] is not None:
            _exit_worker()


__all__ = ["JobError", "leave_if_terminating"]
