"""Pictures of a task stream for ``render_mode="rgb_array"`` (one fixed frame size).

A frame shows, top to bottom: the environment and where the stream is (task
``t`` of ``total``, its phase), the task now presented (its key and text), the
last step as the ``ansi`` mode prints it, the outcomes of the recent steps
(green: success, red: failure, grey: not scored or forfeited) and the phase
timeline (one band per phase, a black cursor at ``t``). Text is drawn with
matplotlib's Agg canvas (imported at the first frame), the bands with numpy.
The frame is :data:`FRAME_SHAPE` whatever the environment and its arguments
(both sides multiples of 16, as video encoders want).
"""

from __future__ import annotations

import textwrap
import threading
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

FRAME_SHAPE = (256, 512, 3)
"""``(height, width, 3)`` of every ``rgb_array`` frame."""
RECENT = 40
"""Outcomes shown in a frame (the most recent ones)."""

_OK, _FAIL, _NONE = (46, 160, 67), (211, 47, 47), (189, 189, 189)
_PHASE_COLOURS = ((144, 202, 249), (255, 224, 130), (239, 154, 154), (165, 214, 167), (206, 147, 216),
                  (128, 222, 234))
_MARGIN = 16
_OUTCOME_ROWS = (150, 168)
_TIMELINE_ROWS = (200, 220)


@dataclass(frozen=True)
class Frame:
    """What one ``rgb_array`` frame shows."""

    title: str
    task: str
    last: str
    outcomes: Sequence[int]
    """Recent outcomes, oldest first: 1 success, 0 failure, -1 not scored."""
    phases: Sequence[tuple[str, int]]
    """``(name, length)`` of every phase, in order."""
    t: int
    total: int


_local = threading.local()


def _canvas() -> tuple[Any, Any]:
    figure_canvas = getattr(_local, "canvas", None)
    if figure_canvas is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        height, width, _ = FRAME_SHAPE
        figure = Figure(figsize=(width / 100, height / 100), dpi=100, facecolor="white")
        figure_canvas = _local.canvas = (figure, FigureCanvasAgg(figure))
    return figure_canvas


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def draw_frame(frame: Frame) -> np.ndarray:
    """The frame as a new ``uint8`` array of shape :data:`FRAME_SHAPE`."""
    height, width, _ = FRAME_SHAPE
    figure, canvas = _canvas()
    figure.clear()

    def text(y: int, s: str, size: float = 6.5, weight: str = "normal") -> None:
        figure.text(_MARGIN / width, 1 - y / height, s, fontsize=size, family="monospace", va="top",
                    ha="left", weight=weight)

    text(4, _clip(frame.title, 60), 8.5, "bold")
    task_lines = textwrap.wrap(frame.task, 82)[:6] or ["(no task presented)"]
    text(24, "\n".join(_clip(line, 82) for line in task_lines))
    text(104, _clip("last: " + (frame.last.strip() or "-"), 82))
    text(_OUTCOME_ROWS[0] - 16, f"recent outcomes (last {RECENT})", 6.5)
    text(_TIMELINE_ROWS[0] - 16, "phase timeline", 6.5)
    names = "  ".join(f"{i}:{name}" for i, (name, _) in enumerate(frame.phases))
    text(_TIMELINE_ROWS[1] + 6, _clip(names, 90), 6.0)
    canvas.draw()
    image = np.array(canvas.buffer_rgba(), dtype=np.uint8)[:, :, :3]

    # recent outcomes: one cell per step, oldest left
    top, bottom = _OUTCOME_ROWS
    cell = (width - 2 * _MARGIN) // RECENT
    for i, outcome in enumerate(list(frame.outcomes)[-RECENT:]):
        colour = _OK if outcome == 1 else _FAIL if outcome == 0 else _NONE
        left = _MARGIN + i * cell
        image[top:bottom, left:left + cell - 2] = colour

    # phase timeline: one band per phase, a cursor at t
    top, bottom = _TIMELINE_ROWS
    span = width - 2 * _MARGIN
    total = max(int(frame.total), 1)
    start = 0
    for i, (_, length) in enumerate(frame.phases):
        left = _MARGIN + (start * span) // total
        right = _MARGIN + ((start + int(length)) * span) // total
        image[top:bottom, left:max(right, left + 1)] = _PHASE_COLOURS[i % len(_PHASE_COLOURS)]
        start += int(length)
    cursor = _MARGIN + (min(max(int(frame.t), 0), total) * span) // total
    image[top - 4:bottom + 4, max(cursor - 1, 0):cursor + 1] = 0
    return image
