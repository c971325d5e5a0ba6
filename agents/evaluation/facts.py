"""Reproduce the paper's MemoryAgentBench FactConsolidation table (and go beyond it).

Each cell runs one episode of ``TEPA/FactConsolidation-v0`` (one split, one
length) with a :class:`~tepa_envs.agents.MemoryAgent` per memory method and
reports the mean substring exact match over the split's 100 questions. The
memories named in ``FactConsolidationEnv.memory_kwargs`` (append-only and the
recency baselines) retrieve by lexical BM25 top-k, as the paper's did; TEPA,
LWW and NoRev look keys up. The data are synthetic (:mod:`tepa_envs.facts.data`)
and written in templates the environment's parser knows.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from tepa_envs.facts.data import LENGTHS, SPLITS, check_length, check_seed, check_split

from tepa_envs.agents.readers.agent import MemoryAgent
from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.memories.registry import make_memory, make_memory_for

DEFAULT_METHODS: tuple[str, ...] = ("tepa", "lww", "tepa-norev", "append-only", "temporal-recency")
DEFAULT_LENGTHS: tuple[str, ...] = tuple(LENGTHS)

# arXiv 2608.07429, MemoryAgentBench FactConsolidation (substring exact match).
PAPER_FACTS: dict[tuple[str, str], dict[str, float]] = {
    ("sh", "6k"): {"tepa": 0.890, "lww": 0.890, "tepa-norev": 0.630, "append-only": 0.583},
    ("sh", "32k"): {"tepa": 0.680},
    ("mh", "6k"): {"tepa": 0.040, "temporal-recency": 0.070, "append-only": 0.080},
    ("sh", "262k"): {"tepa": 0.000, "tepa-norev": 0.000, "append-only": 0.350},
}


def score_method(env: gym.Env, method: str | Memory, seed: int) -> tuple[float, int]:
    """Mean substring exact match of ``method`` (a name, import path or memory
    object) over one episode, and the number of questions.

    Memorize steps ignore their action, so the agent is asked to act only on
    question steps; it learns from every step.
    """
    agent = MemoryAgent(make_memory_for(env, method))
    _, info = env.reset(seed=seed)
    agent.reset(env, seed)
    hits: list[bool] = []
    terminated = truncated = False
    while not (terminated or truncated):
        action = agent.act(info) if info["oracle"]["phase"] == 1 else ""
        _, _, terminated, truncated, info = env.step(action)
        if "success" in info:
            hits.append(bool(info["success"]))
        agent.learn(info)
    return float(np.mean(hits)) if hits else 0.0, len(hits)


def _run_cell(split: str, length: str, methods: tuple[str, ...], seed: int) -> list[dict[str, Any]]:
    env = gym.make("TEPA/FactConsolidation-v0", split=split, length=length)
    rows = []
    for method in methods:
        score, n_questions = score_method(env, method, seed)
        rows.append({"split": split, "length": length, "method": method, "score": score,
                     "n_questions": n_questions, "paper": PAPER_FACTS.get((split, length), {}).get(method)})
    env.close()
    return rows


def reproduce_facts(methods: Sequence[str] | None = None,
                    lengths: Sequence[str] = DEFAULT_LENGTHS,
                    splits: Sequence[str] = SPLITS,
                    seed: int = 0,
                    workers: int = 1,
                    progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Score every method on every split and length.

    Returns rows ``{split, length, method, score, n_questions, paper}`` in the
    order splits x lengths x methods; ``paper`` is the paper's number for the
    cell or ``None``. ``progress(done, total)`` is called as methods finish.
    """
    methods = tuple(DEFAULT_METHODS if methods is None else methods)
    if not methods:
        raise ValueError("methods must name at least one memory method")
    for method in methods:
        if not isinstance(method, str):
            raise TypeError(f"methods must be names or import paths (str), got {type(method).__name__}")
        make_memory(method)  # raises ValueError naming the valid methods
    lengths = tuple(check_length(length) for length in lengths)
    splits = tuple(check_split(split) for split in splits)
    if not lengths or not splits:
        raise ValueError("lengths and splits must each name at least one value")
    seed = check_seed(seed)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    # Largest contexts first, so parallel workers finish together.
    cells = sorted(((s, n) for n in lengths for s in splits), key=lambda c: -LENGTHS[c[1]])
    total, done = len(cells) * len(methods), 0
    by_cell: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if workers == 1:
        for split, length in cells:
            by_cell[(split, length)] = _run_cell(split, length, methods, seed)
            done += len(methods)
            if progress is not None:
                progress(done, total)
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(cells))) as pool:
            futures = {pool.submit(_run_cell, split, length, methods, seed): (split, length)
                       for split, length in cells}
            for future in as_completed(futures):
                by_cell[futures[future]] = future.result()
                done += len(methods)
                if progress is not None:
                    progress(done, total)
    return [row for split in splits for length in lengths for row in by_cell[(split, length)]]


def format_facts_table(rows: Sequence[dict[str, Any]]) -> str:
    """A terminal table: one line per split and length, ``ours (paper)`` per method."""
    if not rows:
        raise ValueError("no rows to format")
    methods = list(dict.fromkeys(row["method"] for row in rows))
    cells = list(dict.fromkeys((row["split"], row["length"]) for row in rows))
    lookup = {(row["split"], row["length"], row["method"]): row for row in rows}
    width = max(11, *(len(m) for m in methods))
    lines = [
        "FactConsolidation, substring exact match: ours (paper). Synthetic data in templates the parser knows.",
        "split".ljust(8) + "".join(m.rjust(width + 2) for m in methods),
    ]
    for split, length in cells:
        line = f"{split.upper()}-{length}".ljust(8)
        for method in methods:
            row = lookup.get((split, length, method))
            if row is None:
                text = "-"
            else:
                paper = row.get("paper")
                text = f"{row['score']:.2f}" + (f" ({paper:.2f})" if paper is not None else "")
            line += text.rjust(width + 2)
        lines.append(line)
    return "\n".join(lines)
