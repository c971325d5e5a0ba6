"""Reproduce the paper's MemoryAgentBench FactConsolidation table (and go beyond it).

Each cell is one split and length of ``TEPA/FactConsolidation-v0``, run through
the same harness as every environment (:func:`~tepa_envs.agents.evaluation.harness.evaluate`):
the settings table has the agent decide only on question steps and read
multi-hop questions hop by hop, and it lists the per-method retrieval
front-end (append-only and the recency baselines retrieve by lexical BM25
top-k, as the paper's did; TEPA, LWW and NoRev look keys up). A cell's score is
the mean substring exact match over the split's questions. The default data
are synthetic (:mod:`tepa_envs.facts.data`), in templates the environment's
parser knows.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import gymnasium as gym
import numpy as np

from tepa_envs.agents.evaluation.harness import evaluate, make_agent
from tepa_envs.agents.evaluation.settings import FACTS_METHODS, PAPER_FACTS, front_end_differences, settings_for
from tepa_envs.agents.memories.protocol import Memory
from tepa_envs.agents.readers.agent import run_episode
from tepa_envs.facts.data import LENGTHS, SPLITS, check_length, check_seed, check_split

ENV_ID = "TEPA/FactConsolidation-v0"
DEFAULT_METHODS: tuple[str, ...] = FACTS_METHODS
DEFAULT_LENGTHS: tuple[str, ...] = tuple(LENGTHS)


def score_method(env: gym.Env, method: str | Memory, seed: int) -> tuple[float, int]:
    """Mean substring exact match of ``method`` (a name, import path or memory
    object) over one episode of ``env``, and the number of questions."""
    settings = settings_for(ENV_ID)
    result = run_episode(env, make_agent(ENV_ID, method), seed, decide_phases=settings.decide_phases)
    return (float(np.mean(result.success)) if result.success.size else 0.0), int(result.success.size)


def reproduce_facts(methods: Sequence[str] | None = None,
                    lengths: Sequence[str] = DEFAULT_LENGTHS,
                    splits: Sequence[str] = SPLITS,
                    seed: int = 0,
                    workers: int = 1,
                    progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Score every method on every split and length.

    Returns rows ``{split, length, method, score, n_questions, paper}`` in the
    order splits x lengths x methods; ``paper`` is the paper's number for the
    cell or ``None``. ``progress(done, total)`` is called as cells finish.
    """
    methods = tuple(DEFAULT_METHODS if methods is None else methods)
    if not methods:
        raise ValueError("methods must name at least one memory method")
    for method in methods:
        if not isinstance(method, str):
            raise TypeError(f"methods must be names or import paths (str), got {type(method).__name__}")
    lengths = tuple(check_length(length) for length in lengths)
    splits = tuple(check_split(split) for split in splits)
    if not lengths or not splits:
        raise ValueError("lengths and splits must each name at least one value")
    seed = check_seed(seed)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    cells = [(s, n) for s in splits for n in lengths]
    rows: list[dict[str, Any]] = []
    for done, (split, length) in enumerate(cells, start=1):
        evaluation = evaluate(ENV_ID, methods, [seed], env_kwargs={"split": split, "length": length},
                              workers=min(workers, len(methods)))
        for method in methods:
            success = evaluation.runs[method].success[0]
            rows.append({"split": split, "length": length, "method": method,
                         "score": float(success.mean()) if success.size else 0.0,
                         "n_questions": int(success.size),
                         "paper": PAPER_FACTS.get((split, length), {}).get(method)})
        if progress is not None:
            progress(done * len(methods), len(cells) * len(methods))
    return rows


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
    differences = front_end_differences(ENV_ID, methods)
    if differences:
        lines.append("front-end differences: " + "; ".join(
            f"{m}: {', '.join(f'{k}={v}' for k, v in kwargs.items())}" for m, kwargs in differences.items()))
    return "\n".join(lines)
