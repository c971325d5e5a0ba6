"""Where batches of jobs run: this process, a local process pool, or Ray.

A backend runs ``fn(batch)`` for the batches the executor submits
(:func:`~tepa_envs.agents.evaluation.engine.executor.run_batches`) and hands the
results back as they finish, in any order; the driver alone writes a store.
Results never depend on the backend or the number of workers: an episode's
numbers are a function of its cell and seed only.

* :class:`LocalBackend` (the default, nothing to install): ``workers == 1`` runs
  batches in this process; more use a process pool whose workers die with the
  driver (even ``kill -9``) and leave Ctrl-C to it (:mod:`.pool`).
* :class:`RayBackend` (``pip install "tepa-envs[ray]"``): batches are Ray tasks.
  It joins the cluster at ``address`` (``--ray-address``, else ``RAY_ADDRESS``),
  or starts a local Ray with ``workers`` CPUs (the machine's cores by default).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any, Callable, Iterable, Sequence

from tepa_envs.error import DependencyNotInstalled, TepaError
from tepa_envs.agents.evaluation.engine.pool import _call_job, _sweep_worker_init

BACKENDS: tuple[str, ...] = ("local", "ray")


class BackendError(TepaError, RuntimeError):
    """A backend that cannot start (Ray missing, a cluster that cannot be reached): one line."""


class RayNotInstalled(BackendError, DependencyNotInstalled):
    """``--backend ray`` without Ray: the project's one missing-dependency error (Gymnasium's
    :class:`~gymnasium.error.DependencyNotInstalled`) that is also a :class:`BackendError`."""


RAY_MISSING = '--backend ray needs Ray: pip install "tepa-envs[ray]"'


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


class LocalBackend:
    """Batches in this process (``workers == 1``) or in a pool of ``workers`` processes."""

    name = "local"

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = workers
        self.pool: ProcessPoolExecutor | None = None
        self.fn: Callable[[Any], Any] | None = None

    def start(self, fn: Callable[[Any], Any], n_batches: int) -> None:
        self.fn = fn
        self.workers = max(1, min(self.workers, n_batches))  # never more workers than batches
        if self.workers > 1:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            self.pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_sweep_worker_init,
                                            initargs=(os.getpid(),))

    @property
    def slots(self) -> int:
        """Batches kept in flight: two per worker, so none waits for the driver."""
        return 1 if self.pool is None else 2 * self.workers

    def describe(self) -> str:
        return "this process" if self.pool is None else f"a local pool of {self.workers} processes"

    def submit(self, batch: Any) -> Any:
        assert self.fn is not None
        if self.pool is None:
            return _Deferred(self.fn, batch)
        return self.pool.submit(_call_job, self.fn, (0, batch))  # marks the worker busy: SIGTERM waits for it

    def wait(self, handles: Iterable[Any]) -> list[tuple[Any, Any]]:
        """Block until at least one handle is done; ``(handle, result)`` of every done one."""
        handles = list(handles)
        if self.pool is None:
            return [(handles[0], handles[0].run())]
        done, _ = wait_futures(handles, return_when=FIRST_COMPLETED)
        return [(future, future.result()) for future in handles if future in done]

    def cancel(self, handles: Iterable[Any]) -> list[Any]:
        """Cancel what has not started; the handles still running."""
        running = []
        for handle in handles:
            if isinstance(handle, Future) and not handle.cancel():
                running.append(handle)
        return running

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class _Deferred:
    """A batch run in this process when the driver waits for it."""

    def __init__(self, fn: Callable[[Any], Any], batch: Any) -> None:
        self.fn, self.batch = fn, batch

    def run(self) -> Any:
        return self.fn(self.batch)


class RayBackend:
    """Batches as Ray tasks (one CPU each) on an existing cluster or a local Ray."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None) -> None:
        self.workers = workers
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.cpus = 1
        self.started_ray = False
        self.remote: Any = None

    def start(self, fn: Callable[[Any], Any], n_batches: int) -> None:
        try:
            import ray
        except ImportError:
            raise RayNotInstalled(RAY_MISSING) from None
        if not ray.is_initialized():
            saved = os.environ.get("PYTHONPATH")
            try:
                if self.address:
                    ray.init(address=self.address, configure_logging=False)
                else:
                    # a local Ray's workers inherit this environment: the driver's working directory
                    # on their path, for methods given as module:Class (a runtime_env would do the
                    # same at several seconds' cost)
                    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [os.getcwd(), saved] if p)
                    ray.init(num_cpus=self.workers or os.cpu_count() or 1, include_dashboard=False,
                             configure_logging=False)
            except Exception as exc:  # ConnectionError, RuntimeError, ...: any failure to start or join
                where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
                raise BackendError(f"cannot start {where}: {' '.join(str(exc).split())[:300]}") from None
            finally:
                if saved is None:
                    os.environ.pop("PYTHONPATH", None)
                else:
                    os.environ["PYTHONPATH"] = saved
            self.started_ray = True
        self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.remote = ray.remote(num_cpus=1)(fn)

    @property
    def slots(self) -> int:
        return 2 * self.cpus

    def describe(self) -> str:
        where = f"the Ray cluster at {self.address}" if self.address else "a local Ray"
        return f"{where} ({self.cpus} CPUs)"

    def submit(self, batch: Any) -> Any:
        return self.remote.remote(batch)

    def wait(self, handles: Iterable[Any]) -> list[tuple[Any, Any]]:
        import ray

        handles = list(handles)
        ready, rest = ray.wait(handles, num_returns=1)
        if rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        return [(ref, ray.get(ref)) for ref in ready]

    def cancel(self, handles: Iterable[Any]) -> list[Any]:
        """Ray cannot say which tasks started: cancel none, wait for all (batches are short)."""
        return list(handles)

    def close(self) -> None:
        if self.started_ray:
            import ray

            ray.shutdown()
            self.started_ray = False


def make_backend(name: str, workers: int | None, address: str | None = None) -> LocalBackend | RayBackend:
    if name == "local":
        return LocalBackend(workers or os.cpu_count() or 1)
    if name == "ray":
        if not ray_available():
            raise RayNotInstalled(RAY_MISSING)
        return RayBackend(workers, address)
    raise BackendError(f"unknown backend {name!r}; valid: {', '.join(BACKENDS)}")


def default_batch_size(backend: LocalBackend | RayBackend, pending: int) -> int:
    """Episodes per batch: enough batches to balance the workers (and lose little on a
    kill), few enough that scheduling does not dominate (Ray's per-task cost is larger)."""
    if isinstance(backend, RayBackend):
        return max(1, min(128, -(-pending // (backend.cpus * 8))))
    return max(1, min(16, -(-pending // (max(1, backend.workers) * 16))))


def chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


__all__ = ["BACKENDS", "BackendError", "LocalBackend", "RayBackend", "RayNotInstalled", "chunks", "default_batch_size",
           "make_backend", "ray_available"]
