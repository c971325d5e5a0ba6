"""FactConsolidation: every method on synthetic and on the official MemoryAgentBench rows.

Each cell is one data source (``synthetic``: :mod:`tepa_envs.facts.data`;
``real``: an official row found in the data folder), split and length of
``TEPA/FactConsolidation-v0``. Every method gets the same front-end: the
environment's fact extraction (frames induced from the record,
:mod:`tepa_envs.facts.extraction`) and the reader's question understanding
(a chain of hops through the memory, :mod:`tepa_envs.agents.readers.questions`);
methods differ only in what their memory keeps valid and how it ranks. The
paper's own front-end for append-only (lexical BM25 top-k over the stored
facts) is a separately named row, ``append-only-bm25``. A cell's score is the
mean substring exact match over the split's questions, one answer per
question; the agent decides on question steps only.

Every method is scored under each *question reader*
(:data:`~tepa_envs.agents.readers.reading.QUESTION_READERS`, readings
``question-<reader>``): ``newest`` (the reader resolves conflicts by fact order,
so every memory that shows the newest value scores alike), ``memory-order`` (the
memory must resolve conflicts: each hop uses the record the memory ranks first by
what it states about its records, records it states nothing to tell apart read in
the order stored) and ``local-lm`` (the packaged language model reads each hop's
records; opt-in, on the first :data:`LM_QUESTIONS` questions of a cell, skipped
with a reason when the model or its runtime is absent).

Per question the runs keep their provenance (the chain's keys, the values the
memory returned, the serials of the facts used); :func:`diagnose` sorts a
method's misses into question understanding, a hop's extraction and a stale
hop value.

The official rows are looked for in ``data_dir``, else ``$TEPA_MAB_DATA``,
else the project's shared folder beside a checkout
(``../shared/data/memoryagentbench``): files named
``factconsolidation_<split>_<length>.json`` (or ``.jsonl`` / ``.parquet``), or the
published ``Conflict_Resolution-00000-of-00001.parquet`` holding all eight rows,
MemoryAgentBench's own schema. Configurations without such a file have no real row.
Every result row names its size (``length`` and ``n_facts``) and its ``origin``:
``official`` (a MemoryAgentBench row, ``data`` its file) or ``generated`` (the
shaped generator, seed 0).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import gymnasium as gym
import numpy as np

from tepa_envs.core.step_info import is_scored
from tepa_envs.agents.evaluation.analysis.paper import FACTS_ENV_ID, FACTS_EXTRA_ROWS, FACTS_METHODS, PAPER_FACTS
from tepa_envs.agents.evaluation.engine.executor import ProgressHook, run_jobs
from tepa_envs.agents.evaluation.engine.jobs import Job, Method, MethodSpec, method_label
from tepa_envs.agents.evaluation.engine.runner import make_agent
from tepa_envs.agents.evaluation.outputs.facts_tables import BREAKDOWN, ORIGINS
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.readers.agent import EpisodeObserver, MemoryAgent, run_episode
from tepa_envs.agents.readers.local_lm import DEFAULT_MODEL, check_runtime, locate_model
from tepa_envs.agents.readers.questions import words_of
from tepa_envs.agents.readers.reading import QUESTION_READERS
from tepa_envs.facts.data import LENGTHS, SPLITS, check_length, check_seed, check_split
from tepa_envs.facts.env import FactConsolidationEnv
from tepa_envs.facts.loader import find_official
from tepa_envs.facts.metric import normalize_answer

ENV_ID = FACTS_ENV_ID
DEFAULT_METHODS: tuple[str, ...] = FACTS_METHODS
DEFAULT_LENGTHS: tuple[str, ...] = tuple(LENGTHS)
DATA_ENV = "TEPA_MAB_DATA"
SOURCES: tuple[str, ...] = ("synthetic", "real")
READERS: tuple[str, ...] = tuple(QUESTION_READERS)
DEFAULT_READERS: tuple[str, ...] = ("newest", "memory-order")
"""The question readers run by default; ``local-lm`` is opt-in (about a second per decision)."""
LM_QUESTIONS = 20
"""Questions per cell (the first ones of the split) the ``local-lm`` reader answers."""
_SHARED = Path(__file__).resolve().parents[4] / "shared" / "data" / "memoryagentbench"



def extra_rows() -> tuple[MethodSpec, ...]:
    """The separately named rows with a method-specific front-end (``append-only-bm25``)."""
    return tuple(MethodSpec(label, spec, dict(kwargs)) for label, spec, kwargs in FACTS_EXTRA_ROWS)


# ------------------------------------------------------------------ official rows
def data_folder(data_dir: str | Path | None = None) -> Path | None:
    """The folder of the official rows: ``data_dir``, ``$TEPA_MAB_DATA``, or the shared
    folder beside a checkout; ``None`` when none of them exists."""
    for candidate in (data_dir, os.environ.get(DATA_ENV), _SHARED):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    if data_dir is not None:
        raise ValueError(f"no such folder of official rows: {data_dir}")
    return None


def official_file(folder: Path | None, split: str, length: str) -> Path | None:
    """The file in ``folder`` that holds the official row of ``split`` and ``length``, if
    any: ``factconsolidation_<split>_<length>.(json|jsonl|parquet)``, else the published
    ``Conflict_Resolution-00000-of-00001.parquet`` when it holds that row
    (:func:`~tepa_envs.facts.loader.find_official`)."""
    return None if folder is None else find_official(folder, split, length)


# ------------------------------------------------------------------ one run
class QuestionRecorder(EpisodeObserver):
    """Per scored question of one episode: id, question, answer, success and the
    provenance of the agent's answer (its :attr:`~tepa_envs.agents.readers.agent.MemoryAgent.last_reading`)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.agent: MemoryAgent | None = None

    def on_reset(self, env: gym.Env, agent: MemoryAgent, info: Any) -> None:
        self.agent = agent

    def on_step(self, info_before: Any, action: Any, info_after: Any) -> None:
        if not is_scored(info_after):
            return
        assert self.agent is not None
        reading = self.agent.last_reading
        self.rows.append({"id": info_before.get("qa_pair_id", ""), "question": info_before.get("context", ""),
                          "answer": action, "success": bool(info_after["success"]),
                          "anchor": reading.anchor if reading else "",
                          "failure": reading.failure if reading else "",
                          "hops": [[h.key, h.value, h.t] for h in reading.hops] if reading else []})


class QuestionLimit(gym.Wrapper):
    """Ends the episode after its first ``n`` scored questions (the ``local-lm`` subset)."""

    def __init__(self, env: gym.Env, n: int) -> None:
        super().__init__(env)
        self.n = n
        self._asked = 0

    def reset(self, **kwargs: Any):
        self._asked = 0
        return self.env.reset(**kwargs)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if is_scored(info):
            self._asked += 1
            terminated = terminated or self._asked >= self.n
        return obs, reward, terminated, truncated, info


def check_reader(reader: str) -> str:
    if reader not in READERS:
        raise ValueError(f"unknown question reader {reader!r}; valid: {', '.join(READERS)}")
    return reader


def lm_available() -> str | None:
    """``None`` when the ``local-lm`` reader can run, else why not (model or runtime absent)."""
    try:
        locate_model(DEFAULT_MODEL)
        check_runtime()
    except Exception as exc:  # ModelNotInstalled, or the optional import failing
        return str(exc)
    return None


def run_questions(env: gym.Env, method: Method, seed: int, reader: str | None = None,
                  max_questions: int | None = None) -> list[dict[str, Any]]:
    """One episode of ``method`` on ``env`` (the one episode loop); per question: id,
    question, answer, success and provenance (``hops``: ``[key, value, serial]`` per hop, ``anchor``).

    ``reader``: a question reader (:data:`READERS`; ``None``: the settings' reading);
    ``max_questions``: stop after that many questions (default: ``local-lm`` answers
    :data:`LM_QUESTIONS`, the others all)."""
    job = Job.resolve(ENV_ID, method, seed)
    if reader is not None:
        check_reader(reader)
        kwargs = {"reader": "local-lm"} if reader == "local-lm" else job.reader_kwargs
        job = replace(job, reading=f"question-{reader}", reader_kwargs=kwargs)
        if max_questions is None and reader == "local-lm":
            max_questions = LM_QUESTIONS
    recorder = QuestionRecorder()
    run_env = env if max_questions is None else QuestionLimit(env, max_questions)
    run_episode(run_env, make_agent(job), seed, decide_phases=job.decide_phases, observers=(recorder,))
    return recorder.rows


def score_method(env: gym.Env, method: Method, seed: int, reader: str | None = None) -> tuple[float, int]:
    """Mean substring exact match of ``method`` (a name, import path, :class:`MethodSpec`
    or memory object) over one episode of ``env`` under question ``reader``, and the
    number of questions."""
    rows = run_questions(env, method, seed, reader)
    return (float(np.mean([r["success"] for r in rows])) if rows else 0.0), len(rows)


def _job(job: tuple[str, str, str, str | None, str | MethodSpec, int, str]) -> dict[str, Any]:
    source, split, length, path, method, seed, reader = job
    kwargs: dict[str, Any] = {"split": split, "length": length}
    if path is not None:
        kwargs["data_path"] = path
    env = gym.make(ENV_ID, **kwargs)
    try:
        questions = run_questions(env, method, seed, reader)
        native = _facts_env(env)
        coverage = native.coverage()
        breakdown = diagnose(env, questions)
        assert native.data is not None  # set by the episode's reset
        n_facts = len(native.data.facts)
    finally:
        env.close()
    for row, kind in zip(questions, breakdown["per_question"]):
        row["breakdown"] = kind
    return {"questions": questions, "coverage": coverage, "breakdown": breakdown["counts"], "n_facts": n_facts}


def _describe(job: tuple) -> str:
    source, split, length, _, method, seed, reader = job
    return f"{source} {split}-{length}, method {method_label(method)}, reader {reader}, seed {seed}"


# ------------------------------------------------------------------ the table
def reproduce_facts(methods: Sequence[str | MethodSpec] | None = None,
                    lengths: Sequence[str] = DEFAULT_LENGTHS,
                    splits: Sequence[str] = SPLITS,
                    seed: int = 0,
                    workers: int = 1,
                    progress: ProgressHook | None = None,
                    sources: Sequence[str] = SOURCES,
                    data_dir: str | Path | None = None,
                    with_extra_rows: bool = True,
                    readers: Sequence[str] = DEFAULT_READERS,
                    log: Any = None) -> list[dict[str, Any]]:
    """Score every method on every source, split and length.

    Returns rows ``{source, origin, split, length, n_facts, reader, method, score,
    n_questions, paper, coverage, data, breakdown, questions}`` in the order sources x splits x lengths x readers x methods
    (``questions``: per-question provenance, :func:`run_questions`; ``coverage``:
    the share of the record's fact sentences the front-end keyed). Real rows exist
    only for the lengths whose official file is in the data folder
    (:func:`data_folder`). ``with_extra_rows`` adds ``append-only-bm25``.
    ``readers``: the question readers (:data:`READERS`); ``local-lm`` answers the
    first :data:`LM_QUESTIONS` questions of a cell and is left out, with the reason
    passed to ``log``, when the model or its runtime is not installed.
    """
    methods = list(DEFAULT_METHODS if methods is None else methods)
    if not methods:
        raise ValueError("methods must name at least one memory method")
    for method in methods:
        if not isinstance(method, (str, MethodSpec)):
            raise TypeError(f"methods must be names, import paths or MethodSpec, got {type(method).__name__}")
    if with_extra_rows:
        methods += [m for m in extra_rows() if m.label not in {method_label(x) for x in methods}]
    for method in methods:
        if isinstance(method, str):
            make_memory(method)  # an unknown name fails here, before any process starts
    lengths = tuple(check_length(length) for length in lengths)
    splits = tuple(check_split(split) for split in splits)
    if not lengths or not splits:
        raise ValueError("lengths and splits must each name at least one value")
    unknown = [s for s in sources if s not in SOURCES]
    if unknown or not sources:
        raise ValueError(f"sources must be among {SOURCES}, got {list(sources)}")
    readers = [check_reader(r) for r in readers]
    if not readers:
        raise ValueError("readers must name at least one question reader")
    if "local-lm" in readers:
        missing = lm_available()
        if missing is not None:
            readers.remove("local-lm")
            if log is not None:
                log(f"facts: the local-lm question reader is skipped: {missing}")
            if not readers:
                return []
    seed = check_seed(seed)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    folder = data_folder(data_dir) if "real" in sources else None
    cells: list[tuple[str, str, str, str | None]] = []
    for source in sources:
        for split in splits:
            for length in lengths:
                found = official_file(folder, split, length) if source == "real" else None
                if source == "synthetic" or found is not None:
                    cells.append((source, split, length, None if found is None else str(found)))
    jobs = [(source, split, length, path, method, seed, reader) for source, split, length, path in cells
            for reader in readers for method in methods]
    outputs = run_jobs(jobs, _job, workers, progress, describe=_describe)
    rows: list[dict[str, Any]] = []
    for (source, split, length, path, method, _, reader), out in zip(jobs, outputs):
        label = method_label(method)
        questions = out["questions"]
        rows.append({"source": source, "origin": ORIGINS[source], "split": split, "length": length,
                     "n_facts": out["n_facts"], "reader": reader, "method": label,
                     "score": float(np.mean([q["success"] for q in questions])) if questions else 0.0,
                     "n_questions": len(questions), "coverage": out["coverage"],
                     "paper": PAPER_FACTS.get((split, length), {}).get(label),
                     "data": None if path is None else Path(path).name, "breakdown": out["breakdown"],
                     "questions": questions})
    return rows


# ------------------------------------------------------------------ where chains break
def _facts_env(env: gym.Env) -> FactConsolidationEnv:
    """The FactConsolidation environment under ``env``'s wrappers."""
    native = env.unwrapped
    if not isinstance(native, FactConsolidationEnv):
        raise TypeError(f"env must be a FactConsolidation environment, got {type(native).__name__}")
    return native


def diagnose(env: gym.Env, questions: Sequence[dict[str, Any]], max_hops: int = 4) -> dict[str, Any]:
    """Sort one run's questions (:func:`run_questions`) by where the chain broke.

    Over the record's keyed facts (every version of every key), from the anchor
    the reader found: *stale hop value (memory)* when a hop of the reader's chain
    got a value other than its key's newest (the memory kept an overridden
    fact); *hop extraction* when no chain of at most ``max_hops`` keyed facts
    reaches a gold alias; *question understanding* when a chain of newest facts
    reaches it through other keys than the reader took, or the reader found no
    anchor; *stale
    hop value (gold follows an older fact)* when only chains through an older
    version of some fact reach it (MemoryAgentBench merges the counterfactual
    edits of many MQuAKE cases into one list, so a gold answer sometimes follows
    a fact that a later one overrides). Returns ``{counts, per_question}``.
    """
    native = _facts_env(env)
    data = native.data if native.data is not None else native._loaded
    if data is None:
        raise ValueError("diagnose reads an episode's record: reset the environment first")
    versions: dict[str, list[str]] = {}
    for evidence in data.evidence:
        if evidence is not None:
            versions.setdefault(evidence.key, []).append(evidence.value)
    about: dict[tuple[str, ...], list[str]] = {}
    for key in versions:
        about.setdefault(words_of(key.partition("|")[0]), []).append(key)
    answers = {q.qa_pair_id: q.answers for q in data.questions}
    counts = dict.fromkeys(BREAKDOWN, 0)
    per_question: list[str] = []
    for row in questions:
        gold = [normalize_answer(a) for a in answers.get(row["id"], ())]
        if row["success"]:
            kind = "correct"
        elif not row["anchor"]:
            kind = "question understanding"
        elif any(key in versions and value != versions[key][-1] for key, value, _ in row["hops"]):
            kind = "stale hop value (memory)"
        else:
            newest_paths, any_version = _reach(words_of(row["anchor"]), gold, versions, about, max_hops)
            if newest_paths:
                kind = "question understanding"
            elif any_version:
                kind = "stale hop value (gold follows an older fact)"
            else:
                kind = "hop extraction"
        counts[kind] += 1
        per_question.append(kind)
    return {"counts": counts, "per_question": per_question}


def _reach(anchor: tuple[str, ...], gold: list[str], versions: dict[str, list[str]],
           about: dict[tuple[str, ...], list[str]], max_hops: int) -> tuple[set[tuple[str, ...]], bool]:
    """(key sequences of newest-value chains reaching a gold alias, whether any-version chains do)."""
    def hit(value: str) -> bool:
        normal = normalize_answer(value)
        return any(g and g in normal for g in gold)

    newest: set[tuple[str, ...]] = set()
    frontier: list[tuple[tuple[str, ...], tuple[str, ...]]] = [(anchor, ())]
    for _ in range(max_hops):
        grown: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        for entity, path in frontier:
            for key in about.get(entity, ()):
                value = versions[key][-1]
                if hit(value):
                    newest.add(path + (key,))
                grown.append((words_of(value), path + (key,)))
        frontier = grown[:5000]
    reached, seen = False, {anchor}
    layer = {anchor}
    for _ in range(max_hops):
        following = set()
        for entity in layer:
            for key in about.get(entity, ()):
                for value in versions[key]:
                    reached = reached or hit(value)
                    target = words_of(value)
                    if target not in seen:
                        seen.add(target)
                        following.add(target)
        layer = following
    return newest, reached


__all__ = ["DATA_ENV", "DEFAULT_READERS", "ORIGINS", "LM_QUESTIONS", "READERS", "QuestionLimit", "QuestionRecorder",
           "check_reader", "lm_available", "data_folder", "diagnose", "extra_rows", "official_file", "reproduce_facts",
           "run_questions", "score_method"]
