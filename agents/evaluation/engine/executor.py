"""The one executor: batches of jobs on a backend, each batch's results taken as it finishes.

:func:`run_batches` is the loop every command runs on: it keeps the backend's
slots full, hands each finished batch to the caller (a sweep writes it to its
store, :func:`run_jobs` puts its outputs in job order), stops at the first job
error (the batches not started are cancelled, those running are awaited), and
turns Ctrl-C into a clean stop. :func:`run_jobs` (``evaluate()``, the suite,
FactConsolidation) and a sweep's ``execute`` (``tepa-bench run``/``sweep``) both
run here, on :class:`~tepa_envs.agents.evaluation.engine.backends.LocalBackend`
(or Ray for a sweep); results never depend on the backend or the number of workers.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Sequence

from tepa_envs.agents.evaluation.engine.backends import LocalBackend, RayBackend, chunks, default_batch_size
from tepa_envs.agents.evaluation.engine.pool import JobError, leave_if_terminating

ProgressHook = Callable[[int, int], None]
"""``progress(done, total)``, called as jobs finish."""
BatchResult = tuple[list[Any], "JobError | None"]
"""What a batch returns: the outputs of the jobs that finished, and the error that stopped it, if any."""


def run_batches(backend: LocalBackend | RayBackend, batches: Iterable[Any],
                take: Callable[[BatchResult], None]) -> bool:
    """Run ``batches`` on the started ``backend``, keeping its slots in flight, and
    ``take`` each batch's result as it arrives (in any order). After a batch reports an
    error no batch is submitted and those running are awaited. Ctrl-C: the batches not
    started are cancelled and those running awaited (a second Ctrl-C stops waiting);
    returns whether it was interrupted."""
    queue = iter(batches)
    in_flight: set[Any] = set()
    failed = False

    def absorb(results: list[tuple[Any, BatchResult]]) -> None:
        nonlocal failed
        for handle, result in results:
            in_flight.discard(handle)
            take(result)
            failed = failed or result[1] is not None

    try:
        while True:
            while not failed and len(in_flight) < backend.slots:
                batch = next(queue, None)
                if batch is None:
                    break
                in_flight.add(backend.submit(batch))
            if not in_flight:
                break
            absorb(backend.wait(in_flight))
            if failed:
                in_flight = set(backend.cancel(in_flight))
                while in_flight:
                    absorb(backend.wait(in_flight))
    except KeyboardInterrupt:
        in_flight = set(backend.cancel(in_flight))
        try:
            while in_flight:
                absorb(backend.wait(in_flight))
        except KeyboardInterrupt:  # a second Ctrl-C: leave the running batches behind
            pass
        return True
    return False


def _run_in_order(worker: Callable[[Any], Any], batch: Sequence[tuple[int, Any]]) -> BatchResult:
    """``worker`` over a batch of ``(index, job)``, as ``(index, output)`` pairs; stops at the
    first job that raises (its :class:`JobError`, with the job's index, is returned, not
    raised: it crosses any backend unwrapped)."""
    outputs = []
    for index, job in batch:
        leave_if_terminating()  # a pool worker whose driver died leaves between jobs
        try:
            outputs.append((index, worker(job)))
        except JobError as error:  # already one line naming its job
            return outputs, error
        except (Exception, SystemExit) as exc:  # SystemExit: user code calling exit() must not end the run silently
            return outputs, JobError.from_exception(exc, index)
    return outputs, None


def run_jobs(jobs: Sequence[Any], worker: Callable[[Any], Any], workers: int,
             progress: ProgressHook | None = None, describe: Callable[[Any], str] | None = None) -> list[Any]:
    """``worker`` over ``jobs``, outputs in job order, in this process or a pool of at most
    ``workers`` processes (never more than there are batches of jobs); results do not
    depend on the number of workers.

    An exception a job raises comes out as :class:`JobError` (``describe(job)`` names
    the job in it; the first such job in order when several raised); the jobs not yet
    started are cancelled. Pool workers exit when this process dies, even by ``kill -9``."""
    jobs = list(jobs)
    backend = LocalBackend(workers)
    size = 1 if backend.workers == 1 else default_batch_size(backend, len(jobs))
    batches = chunks(list(enumerate(jobs)), size)
    outputs: list[Any] = [None] * len(jobs)
    errors: list[JobError] = []
    done = 0

    def take(result: BatchResult) -> None:
        nonlocal done
        finished, error = result
        for index, output in finished:
            outputs[index] = output
        done += len(finished)
        if error is not None:
            errors.append(error)
        elif progress:
            progress(done, len(jobs))

    backend.start(functools.partial(_run_in_order, worker), len(batches))
    try:
        interrupted = run_batches(backend, batches, take)
    finally:
        backend.close()
    if errors:
        error = min(errors, key=lambda e: e.index)
        if describe is not None and 0 <= error.index < len(jobs) and not error.job:
            error.job = describe(jobs[error.index])
        raise error
    if interrupted:
        raise KeyboardInterrupt
    return outputs


__all__ = ["BatchResult", "ProgressHook", "run_batches", "run_jobs"]
