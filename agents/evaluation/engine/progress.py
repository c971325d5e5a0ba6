"""Progress of long commands: a tqdm bar on a terminal, a line every few seconds otherwise.

Every long ``tepa-bench`` command reports through :class:`Progress`, so a run in a
terminal shows a bar (done/total, rate, time left) and a run whose stderr is a file
or a pipe (CI, ``nohup``, a notebook) gets one plain line per ``interval`` seconds and
one when the stage ends. ``quiet`` turns both off; the stage lines a command logs
(:func:`stage_logger`) stay.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

from tqdm import tqdm

MODES: tuple[str, ...] = ("bar", "lines", "off")
DEFAULT_INTERVAL_S = 10.0
"""Seconds between two progress lines when stderr is not a terminal."""


def progress_mode(*, quiet: bool, stream: TextIO | None = None) -> str:
    """``"off"`` when quiet, ``"bar"`` on a terminal, ``"lines"`` otherwise."""
    if quiet:
        return "off"
    stream = sys.stderr if stream is None else stream
    return "bar" if stream.isatty() else "lines"


class Progress:
    """Progress of one stage, called as ``progress(done, total)`` (the executors' hook)
    or advanced with :meth:`update`.

    Args:
        label: what the stage does, printed before the counts.
        mode: ``"bar"``, ``"lines"`` or ``"off"`` (see :func:`progress_mode`).
        stream: where to write (default: stderr).
        interval: seconds between two lines in ``"lines"`` mode.
        unit: what is counted (``"ep"``: episodes).
    """

    def __init__(self, label: str, mode: str = "bar", *, stream: TextIO | None = None,
                 interval: float = DEFAULT_INTERVAL_S, unit: str = "ep", initial: int = 0,
                 total: int | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.label, self.mode, self.unit, self.interval = label, mode, unit, interval
        self.stream = sys.stderr if stream is None else stream
        self.done, self.total = initial, total
        self._offset = self._round_done = self._round_total = 0
        self.started = self.last_line = time.perf_counter()
        self.bar: tqdm | None = None
        self.closed = False
        if mode == "bar":
            self.bar = tqdm(total=total, initial=initial, unit=unit, desc=label, dynamic_ncols=True,
                            smoothing=0.05, file=self.stream, leave=True)

    def __call__(self, done: int, total: int) -> None:
        """The executors' hook; a count that starts again (the stage's next batch of
        jobs, e.g. the precision rule's extra seeds) adds to the stage's total."""
        if self._round_total and self._round_done >= self._round_total:  # that round is over
            self._offset += self._round_total
        self._round_done, self._round_total = done, total
        self.total = self._offset + total
        self.update(self._offset + done - self.done)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int) -> None:
        if n <= 0:
            return
        self.done += n
        if self.bar is not None:
            if self.bar.total != self.total:
                self.bar.total = self.total
            self.bar.update(n)
        elif self.mode == "lines":
            now = time.perf_counter()
            if now - self.last_line >= self.interval:
                self.last_line = now
                self._line(now)

    def _line(self, now: float) -> None:
        total = "?" if self.total is None else f"{self.total:,}"
        share = f" ({100 * self.done / self.total:.0f} %)" if self.total else ""
        self.stream.write(f"{self.label}: {self.done:,}/{total} {self.unit}{share}, {now - self.started:.0f}s\n")
        self.stream.flush()

    def close(self) -> None:
        """End the stage: the bar's last state stays, or one last line (``"lines"``)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.mode == "lines" and self.done and not self.closed:
            self._line(time.perf_counter())
        self.closed = True


ProgressFactory = Callable[[str], Progress]


def progress_factory(*, quiet: bool, stream: TextIO | None = None,
                     interval: float = DEFAULT_INTERVAL_S) -> ProgressFactory:
    """A maker of one :class:`Progress` per stage, all in the same mode."""
    mode = progress_mode(quiet=quiet, stream=stream)

    def make(label: str) -> Progress:
        return Progress(label, mode, stream=stream, interval=interval)

    return make


def stage_logger(stream: TextIO | None = None) -> Callable[[str], None]:
    """A logger of stage lines (what starts, where files went) with the elapsed time."""
    started = time.perf_counter()

    def log(message: str) -> None:
        out = sys.stderr if stream is None else stream
        out.write(f"[{time.perf_counter() - started:5.0f}s] {message}\n")
        out.flush()

    return log


__all__ = ["DEFAULT_INTERVAL_S", "MODES", "Progress", "ProgressFactory", "progress_factory", "progress_mode",
           "stage_logger"]
