"""TEPA/FactConsolidation-v0: MemoryAgentBench-style fact consolidation as a Gymnasium env."""

from __future__ import annotations

import string
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from tepa_envs.core import Evidence, check_choice, check_int, check_positive_int, check_str
from tepa_envs.core.contracts import TaskEnvDefaults
from tepa_envs.core.render import RECENT, Frame, draw_frame
from tepa_envs.core.step_info import (DEFAULT_INFO_SCHEMA, OracleInfo, StepInfo, check_info_schema, fixed_step_info,
                                      oracle_info, step_info)
from tepa_envs.core.stream import (RENDER_FPS, RENDER_MODES, _print, check_render_mode, check_reset_options,
                                   warn_render_unsupported)
from tepa_envs.error import ResetNeeded
from tepa_envs.facts.choices import CODE_BITS, MAX_CHOICES, AnswerIndex, Candidates, candidate_code, draw_candidates
from tepa_envs.facts.data import check_length, check_split, generate_records
from tepa_envs.facts.shaped import generate_shaped
from tepa_envs.facts.extraction import induce_facts
from tepa_envs.facts.loader import load_records, parse_context, parse_fact, parse_questions, select_record
from tepa_envs.facts.metric import substring_exact_match

PHASES = ("memorize", "questions")
ANSWER_CHARSET = frozenset(string.ascii_letters + string.digits + " .,'-?!:;()&/")
MAX_ANSWER_LENGTH = 256


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    answers: tuple[str, ...]
    key: str              # first-hop key, "" when the question is in unknown templates
    chain: tuple[str, ...]  # relations after the first hop
    qa_pair_id: str


@dataclass(frozen=True, slots=True)
class EpisodeData:
    """One record as the environment streams it."""

    facts: tuple[tuple[int, str], ...]      # (serial, text) in stream order
    evidence: tuple[Evidence | None, ...]   # per fact; None when its template is unknown
    questions: tuple[Question, ...]
    source: str


ParsedFacts = tuple[tuple[tuple[int, str], ...], tuple[Evidence | None, ...], frozenset[str]]


EXTRACTIONS = ("induced", "templates")
GENERATORS = ("shaped", "classic")
ACTION_MODES = ("text", "choice")
DEFAULT_NUM_CHOICES = 4
CHOICE_STREAM = 0xC401CE  # question i's candidates draw from SeedSequence([episode seed, CHOICE_STREAM, i])


def check_action_mode(action_mode: object) -> str:
    return check_choice("action_mode", check_str("action_mode", action_mode), ACTION_MODES)


def check_num_choices(num_choices: object) -> int:
    return check_int("num_choices", num_choices, low=2, high=MAX_CHOICES)  # type: ignore[arg-type]


def check_generator(generator: object) -> str:
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {', '.join(GENERATORS)}, got {generator!r}")
    return str(generator)


def check_extraction(extraction: object) -> str:
    if extraction not in EXTRACTIONS:
        raise ValueError(f"extraction must be one of {', '.join(EXTRACTIONS)}, got {extraction!r}")
    return str(extraction)


def parse_facts(context: str, extraction: str = "induced") -> ParsedFacts:
    """The context's facts in serial order, their evidence, and the keys they state.

    ``extraction``: ``"induced"`` keys every fact by the frames induced from the
    record itself (:func:`~tepa_envs.facts.extraction.induce_facts`,
    ``subject|{S} frame {O}``), whatever its sentence forms; ``"templates"``
    keys only facts in the first generator's templates
    (:func:`~tepa_envs.facts.loader.parse_fact`, ``subject|relation``), an
    oracle front-end kept for comparison.
    """
    facts = tuple(sorted(parse_context(context), key=lambda f: f[0]))
    check_extraction(extraction)
    if extraction == "templates":
        parsed = [parse_fact(text) for _, text in facts]
    else:
        parsed = [None if f is None else (f.key, f.object) for f in induce_facts([text for _, text in facts])]
    evidence = tuple(None if p is None else Evidence(p[0], p[1], serial, None, "fact")
                     for (serial, _), p in zip(facts, parsed))
    return facts, evidence, frozenset(e.key for e in evidence if e is not None)


def prepare_record(record: dict[str, Any], parsed: ParsedFacts | None = None,
                   extraction: str = "induced") -> EpisodeData:
    """Parse a validated record: facts to evidence, questions to keys and chains.

    ``parsed`` is :func:`parse_facts` of the record's context when already known.
    Questions get a key and chain only when they parse in the generator's
    templates against the facts' keys; other questions (e.g. over induced
    frames) have key ``""``: mapping them to a key is the reader's work
    (``read_question``).
    """
    facts, evidence, known_keys = parse_facts(record["context"], extraction) if parsed is None else parsed
    ids = record["metadata"].get("qa_pair_ids") or [
        f"{record['metadata'].get('source', 'factconsolidation')}_no{i}" for i in range(len(record["questions"]))]
    questions = []
    for text, answers, qid in zip(record["questions"], record["answers"], ids):
        reading = next((r for r in parse_questions(text) if r[0] in known_keys), ("", [])) \
            if extraction == "templates" else ("", [])
        questions.append(Question(text, tuple(answers), reading[0], tuple(reading[1]), qid))
    return EpisodeData(facts, evidence, tuple(questions), str(record["metadata"].get("source", "")))


@lru_cache(maxsize=4)
def generated_episode(length: str, seed: int, split: str, extraction: str = "induced",
                      generator: str = "shaped") -> EpisodeData:
    """The generated record of one split, parsed (cached; both splits share one parse)."""
    records, parsed = _generated(length, seed, extraction, generator)
    return prepare_record(records[split], parsed, extraction)


@lru_cache(maxsize=2)
def _generated(length: str, seed: int, extraction: str, generator: str) -> tuple[dict[str, dict], ParsedFacts]:
    records = generate_shaped(length, seed) if generator == "shaped" else generate_records(length, seed)
    return records, parse_facts(records["sh"]["context"], extraction)


class FactConsolidationEnv(TaskEnvDefaults, gym.Env):
    """
    ## Description

    MemoryAgentBench's FactConsolidation task as an episode. A numbered list of
    facts (``"12. Doka Letubu is married to Nuki Boputi."``) is streamed in
    chunks; some facts are later overridden by counterfactual ones with a
    higher serial number, and the newer fact is the true one. Then questions
    are asked one per step: single-hop (``split="sh"``: "Who is Doka Letubu
    married to?") or multi-hop (``split="mh"``: 2-4 hops, "In which city did
    the spouse of Doka Letubu pass away?"), each hop possibly overridden.

    By default the records come from an offline generator with the official
    rows' episode shape (:mod:`tepa_envs.facts.shaped`: 455 / 2,310 / 4,580 /
    18,332 facts at 6k / 32k / 64k / 262k tokens, 100 questions per split, 2-4
    hop chains, a quarter of the single-hop questions about facts never
    overridden), worded from a general pool of Wikidata-property relations in
    the general forms of English (genitive, possessive, object first and
    subject-first verbs; :mod:`tepa_envs.facts.templates`), none copied from the
    official rows, every relation equally likely, rebuilt from the reset seed.
    With ``data_path`` the environment streams real MemoryAgentBench records
    from a local JSON, JSONL or parquet file instead, at any length (the record
    whose ``metadata.source`` names the split and length). Facts are keyed by frames induced from the record, whatever its
    sentence forms (``extraction``); a fact no frame fits is still shown in
    ``info["context"]`` but yields no evidence (:meth:`coverage` tells the
    share keyed).

    ## Action Space

    ``action_mode="text"`` (default): ``Text(256)``, the answer. Memorize steps
    accept and ignore any string.

    ``action_mode="choice"``: ``Discrete(num_choices)``, the index of one of the
    question's ``num_choices`` candidate answers (:mod:`tepa_envs.facts.choices`:
    the current value, the stale value(s) its overridden facts give, and
    distractors stated under the same frame, all from the episode's own keyed
    facts, in an order drawn from the reset's seed). Memorize steps accept and
    ignore any action. RL libraries whose models pick among discrete actions
    (Stable-Baselines3, RLlib, Tianshou, the RL Zoo, CleanRL) train on this mode.

    ## Observation Space

    ``Dict(phase=Discrete(2), progress=Box(0, 1, (1,)))``: 0 while memorizing,
    1 while answering, and the fraction of the episode's steps taken. With
    ``action_mode="choice"`` also ``choices=MultiBinary(16 * num_choices)``: each
    candidate of the question now presented as a 16-bit code of its normalised
    text, candidate ``i`` in entries ``16 i`` to ``16 i + 15``
    (:func:`~tepa_envs.facts.choices.candidate_code`: the same answer has the same
    code wherever it appears; the code says nothing about which is correct), zeros
    while no question is presented (one flat vector: TorchRL takes no 2-D
    ``MultiBinary``). The texts are in ``info["choices"]``.

    ## Rewards

    On question steps 1.0 when the answer (in ``"choice"`` mode the chosen
    candidate's text) is a substring exact match of a gold alias after
    MemoryAgentBench's normalisation, else 0.0. Memorize steps: 0.0. Exactly one
    candidate scores.

    ## Episode End

    Terminates after the last question; there is no truncation.

    ## Evidence and info

    ``info["key"]`` is ``""`` on memorize steps and on questions of the induced
    front-end (the reader maps the question text); with
    ``extraction="templates"`` it is the question's first-hop key
    ``subject|relation`` and ``info["chain"]`` the further relations of a
    multi-hop question. ``info["context"]`` is the chunk of numbered facts or
    the question, ``info["qa_pair_id"]`` the question's id.
    After a memorize step ``info["evidence"]`` holds the chunk's facts as
    asserted :class:`~tepa_envs.core.Evidence` (``outcome=None``,
    ``t`` = serial number, ``source="fact"``); after a question step
    ``info["success"]`` and ``info["answer"]`` report the scoring. The oracle
    phases are ``memorize`` (0) and ``questions`` (1); ``oracle-reset`` is not
    meaningful here (it would clear the memory before the first question).
    ``env.unwrapped.last_evidence`` is the last step's evidence list, whatever
    ``info_schema``.

    With ``info_schema="fixed"`` every ``info`` (reset, every step, the terminal
    step) has the same keys with values of fixed type, sentinels where a value
    does not apply (:mod:`tepa_envs.core.step_info`): ``key``, ``context`` (str),
    ``t`` (int), ``scored`` (bool: a question step; ``False`` at reset and on
    memorize steps), ``success`` (bool, ``False`` unless scored), ``message``
    (str: the step as ``"ansi"`` renders it, ``""`` at reset), ``evidence``
    (``{"count", "key", "value", "t", "outcome", "source"}``: how many facts the
    chunk keyed and the first of them; ``0, "", "", -1, -1, ""`` when none),
    ``oracle`` (``{"phase", "phase_name", "phase_changed", "correct"}``, without
    the alias list; ``-1, "", False, ""`` at the terminal step), ``answer`` (str,
    ``""`` unless scored), ``qa_pair_id`` (str, ``""`` on memorize steps) and
    ``chain`` (str: the relations joined by ``","``, ``""`` when none); with
    ``action_mode="choice"`` also ``choices`` (str: the candidates of the question
    now presented, in action order, joined by ``"\\n"``; ``""`` when none). With
    ``"rich"`` (the variable view) the keys are as above:
    ``evidence`` the list, ``oracle["answers"]`` the aliases, ``chain`` a list,
    ``success`` and ``answer`` only after a question, ``oracle`` only while a
    step is presented, ``choices`` (a list) only while a question is presented.

    ## Rendering

    ``metadata["render_modes"]`` is ``["ansi", "human", "rgb_array"]``
    (``render_fps`` 4): ``"ansi"`` returns the last step as a line of text,
    ``"human"`` prints it to stdout at every step, ``"rgb_array"`` returns a
    ``uint8`` picture of shape ``(256, 512, 3)`` (the step now presented, the
    last one, the recent question outcomes and the memorize/questions timeline).

    ## Arguments

    * ``split``: ``"sh"`` or ``"mh"``.
    * ``length``: ``"6k"``, ``"32k"``, ``"64k"`` or ``"262k"``.
    * ``chunk_facts``: facts per memorize step (default 40, about 540 tokens).
    * ``data_path``: optional local file of MemoryAgentBench records in the published
      schema: the published split ``Conflict_Resolution-00000-of-00001.parquet``
      (all eight configurations; reading parquet needs pyarrow) or one row's file
      ``factconsolidation_<split>_<length>.json`` (``.jsonl``, ``.parquet``). The
      record whose ``metadata.source`` is ``factconsolidation_<split>_<length>`` is
      used; a file without it is refused (``ValueError`` naming the sources it holds).
    * ``extraction``: how facts are keyed, the same for every memory method:
      ``"induced"`` (default: frames induced from the record itself,
      :mod:`tepa_envs.facts.extraction`; keys ``subject|frame`` such as
      ``"Victoria Beckham|{S} is married to {O}"``; questions then carry
      ``key=""`` and the reader answers the question text by a chain of hops
      through the memory, reading ``"question"``, which may call
      :meth:`known_keys`) or ``"templates"`` (an oracle front-end that knows
      the first generator's templates: keys ``subject|relation``, questions
      keyed with their relation chain; other sentence forms get no key).
    * ``generator``: ``"shaped"`` (default, :mod:`tepa_envs.facts.shaped`) or
      ``"classic"`` (the first generator, :mod:`tepa_envs.facts.data`: 16
      relations in fixed templates, every single-hop question about an
      overridden fact; the one ``extraction="templates"`` knows). Ignored with
      ``data_path``.
    * ``render_mode``: ``None``, ``"ansi"``, ``"human"`` or ``"rgb_array"`` (see
      "Rendering"); any other mode is accepted, as in Gymnasium, and :meth:`render`
      then warns and returns ``None``.
    * ``info_schema``: ``"fixed"`` (default) or ``"rich"``, see "Evidence and info".
    * ``action_mode``: ``"text"`` (default: MemoryAgentBench's task as the paper
      states it, a free-text answer scored by substring exact match, read by the
      question readers of :mod:`tepa_envs.agents`) or ``"choice"`` (a
      ``Discrete(num_choices)`` choice among candidates, for RL libraries; see
      "Action Space"). Text mode is unchanged by the option.
    * ``num_choices``: candidates per question with ``action_mode="choice"``
      (default 4, from 2 to 16); ignored in text mode. A record with fewer distinct
      answer values is refused at the question (``ValueError``).
    """

    metadata = {"render_modes": RENDER_MODES, "render_fps": RENDER_FPS}

    def __init__(self, split: str = "sh", length: str = "6k", chunk_facts: int = 40,
                 data_path: str | Path | None = None, render_mode: str | None = None,
                 extraction: str = "induced", generator: str = "shaped",
                 info_schema: str = DEFAULT_INFO_SCHEMA, action_mode: str = "text",
                 num_choices: int = DEFAULT_NUM_CHOICES) -> None:
        self.info_schema = check_info_schema(info_schema)
        self.action_mode = check_action_mode(action_mode)
        self.num_choices = check_num_choices(num_choices)
        self.split = check_split(split)
        self.length = check_length(length)
        self.chunk_facts = check_positive_int("chunk_facts", chunk_facts)
        self.render_mode = check_render_mode(render_mode)
        self.extraction = check_extraction(extraction)
        self.generator = check_generator(generator)
        self.data_path = None if data_path is None else Path(data_path)
        self._loaded = (None if self.data_path is None
                        else prepare_record(select_record(load_records(self.data_path), split, length),
                                            extraction=extraction))
        spaces: dict[str, gym.Space] = {
            "phase": gym.spaces.Discrete(2),
            "progress": gym.spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32),
        }
        self.action_space: gym.Space
        if self.action_mode == "choice":
            spaces["choices"] = gym.spaces.MultiBinary(self.num_choices * CODE_BITS)
            self.action_space = gym.spaces.Discrete(self.num_choices)
        else:
            self.action_space = gym.spaces.Text(MAX_ANSWER_LENGTH, min_length=0,
                                                charset="".join(sorted(ANSWER_CHARSET)))
        self.observation_space = gym.spaces.Dict(spaces)
        self._no_choices = np.zeros(self.num_choices * CODE_BITS, dtype=np.int8)
        self._choice_seed = 0
        self._candidates: dict[int, Candidates] = {}
        self._answer_index: tuple[EpisodeData | None, AnswerIndex | None] = (None, None)
        self.data: EpisodeData | None = None
        self._known: tuple[int, tuple[str, ...]] = (-1, ())
        self._t = 0
        self._last_line = ""
        self._last_evidence: tuple[Evidence, ...] = ()
        self._outcomes: deque[int] = deque(maxlen=RECENT)

    # --------------------------------------------------------------- gymnasium
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        check_reset_options(options)
        super().reset(seed=seed)
        data_seed = seed
        if self._loaded is not None:
            self.data = self._loaded
        else:
            data_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
            self.data = generated_episode(self.length, int(data_seed), self.split, self.extraction, self.generator)
        if self.action_mode == "choice":
            # the episode's seed (a draw only for an unseeded loaded record, whose text mode draws nothing):
            # both modes draw the same records from the same resets
            self._choice_seed = int(self.np_random.integers(0, 2**31 - 1)) if data_seed is None else int(data_seed)
        self._candidates = {}
        self._n_chunks = -(-len(self.data.facts) // self.chunk_facts)
        self._n_steps = self._n_chunks + len(self.data.questions)
        self._t = 0
        self._last_line = ""
        self._last_evidence = ()
        self._outcomes.clear()
        self._known = (-1, ())
        if self.render_mode == "human":
            _print(f"{type(self).__name__}: {len(self.data.facts)} facts in {self._n_chunks} chunks, "
                   f"{len(self.data.questions)} questions\n")
        return self._observation(), self._info((), None, "")

    def step(self, action: Any):
        if self.data is None:
            raise ResetNeeded("call reset() before step()")
        if self._t >= self._n_steps:
            raise ResetNeeded("the episode has ended; call reset() to start a new one")
        if self.action_mode == "choice":
            choice = self._choice_index(action)
        else:
            action = str(check_str("action", action))  # a numpy str_ (a vector env's action) reads as a str
        success: bool | None = None
        evidence: tuple[Evidence, ...] = ()
        if self._t < self._n_chunks:
            start = self._t * self.chunk_facts
            evidence = tuple(e for e in self.data.evidence[start:start + self.chunk_facts] if e is not None)
            self._last_line = f"memorize chunk {self._t + 1}/{self._n_chunks}: {len(evidence)} facts"
        else:
            question = self.data.questions[self._t - self._n_chunks]
            if self.action_mode == "choice":
                action = self._question_candidates(self._t - self._n_chunks).texts[choice]
            success = substring_exact_match(action, question.answers) > 0.0
            self._last_line = (f"{question.qa_pair_id}: {question.text} -> {action!r} "
                               f"({'ok' if success else 'wrong'}; gold {question.answers[0]!r})")
        self._t += 1
        self._last_evidence = evidence
        self._outcomes.append(-1 if success is None else int(success))
        terminated = self._t >= self._n_steps
        reward = 1.0 if success else 0.0
        info = self._info(evidence, success, action)
        if self.render_mode == "human":
            _print(self._last_line + "\n")
        return self._observation(), reward, terminated, False, info

    def render(self) -> str | np.ndarray | None:
        """``"ansi"``: the last step as one line of text; ``"rgb_array"``: a picture of the
        episode; ``"human"``: ``None`` (the lines are printed as the episode runs). Any
        other mode warns and returns ``None``, as Gymnasium's environments do."""
        if self.render_mode == "ansi":
            return self._last_line + "\n"
        if self.render_mode == "rgb_array":
            return draw_frame(self._frame())
        if self.render_mode != "human":
            warn_render_unsupported(self)
        return None

    def _frame(self) -> Frame:
        name = self.spec.id if self.spec is not None else type(self).__name__
        if self.data is None:
            return Frame(name, "", "", (), (), 0, 1)
        t, n_chunks, n_steps = self._t, self._n_chunks, self._n_steps
        phase = "" if t >= n_steps else PHASES[int(t >= n_chunks)]
        if t < n_chunks:
            presented = f"memorize chunk {t + 1}/{n_chunks}"
        elif t < n_steps:
            presented = f"question {t - n_chunks + 1}/{len(self.data.questions)}: " \
                        f"{self.data.questions[t - n_chunks].text}"
        else:
            presented = ""
        return Frame(f"{name}  t={t}/{n_steps}  phase: {phase}", presented, self._last_line, tuple(self._outcomes),
                     ((PHASES[0], n_chunks), (PHASES[1], len(self.data.questions))), t, n_steps)

    @property
    def last_evidence(self) -> tuple[Evidence, ...]:
        """The :class:`~tepa_envs.core.Evidence` the last step revealed (the chunk's keyed
        facts after a memorize step; ``()`` after reset and questions), whatever ``info_schema``."""
        return self._last_evidence

    # -------------------------------------------------------- language agents
    def choices(self, key: str) -> tuple[str, ...]:
        """Text mode: ``()``, answers are free text. Choice mode: the candidates of the
        question now presented, in action order, whatever ``key`` (``()`` while none is)."""
        check_str("key", key)
        question = self._presented_question() if self.action_mode == "choice" else None
        return () if question is None else self._question_candidates(question).texts

    def to_action(self, value: str) -> str | int:
        """The action that states ``value`` as the answer. Text mode: ``value`` itself.
        Choice mode: the index of the candidate ``value`` states (the one that normalises
        alike, else the first whose normalised text occurs in ``value``'s), ``ValueError``
        when it states none; ``0`` while no question is presented (every action is ignored)."""
        check_str("value", value)
        if self.action_mode == "text":
            return value
        question = self._presented_question()
        if question is None:
            return 0
        candidates = self._question_candidates(question)
        index = candidates.index_of(value)
        if index is None:
            raise ValueError(f"value {value!r} states none of the question's candidates {candidates.texts}")
        return index

    def known_keys(self) -> tuple[str, ...]:
        """The keys of the evidence streamed so far this episode (what a reader that
        kept the keys of ``info["evidence"]`` would know), in stream order, unique."""
        if self.data is None:
            return ()
        shown = min(self._t, self._n_chunks) * self.chunk_facts
        if self._known[0] != shown:
            self._known = (shown, tuple(dict.fromkeys(e.key for e in self.data.evidence[:shown] if e is not None)))
        return self._known[1]

    def coverage(self) -> float | None:
        """The share of the record's fact sentences the extraction keyed (``None`` before reset)."""
        data = self.data if self.data is not None else self._loaded
        if data is None or not data.evidence:
            return None
        return sum(e is not None for e in data.evidence) / len(data.evidence)

    # ------------------------------------------------------------------ helpers
    def _observation(self) -> dict[str, Any]:
        phase = int(self.data is not None and self._t >= self._n_chunks)
        progress = 0.0 if self.data is None else self._t / self._n_steps
        observation: dict[str, Any] = {"phase": phase, "progress": np.array([progress], dtype=np.float32)}
        if self.action_mode == "choice":
            question = self._presented_question()
            observation["choices"] = self._no_choices.copy() if question is None else np.concatenate(
                [candidate_code(text) for text in self._question_candidates(question).texts])
        return observation

    def _presented_question(self) -> int | None:
        """The index of the question now presented, ``None`` while none is."""
        if self.data is None or not self._n_chunks <= self._t < self._n_steps:
            return None
        return self._t - self._n_chunks

    def _question_candidates(self, i: int) -> Candidates:
        """Question ``i``'s candidates (choice mode), drawn once per episode from its own generator."""
        candidates = self._candidates.get(i)
        if candidates is None:
            assert self.data is not None
            index = self._answer_index[1] if self._answer_index[0] is self.data else None
            if index is None:
                index = AnswerIndex(self.data.evidence)
                self._answer_index = (self.data, index)
            question = self.data.questions[i]
            candidates = self._candidates[i] = draw_candidates(
                index, question.text, question.answers, self.split, self.num_choices,
                np.random.default_rng([self._choice_seed, CHOICE_STREAM, i]))
        return candidates

    def _choice_index(self, action: Any) -> int:
        """``TypeError`` unless ``action`` is an integer (a Python or NumPy int, or a 0-d integer
        array), ``ValueError`` outside ``Discrete(num_choices)``."""
        if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
            action = action.item()
        return check_int("action", action, low=0, high=self.num_choices - 1)

    def _info(self, evidence: tuple[Evidence, ...], success: bool | None, answer: str) -> StepInfo:
        assert self.data is not None
        extra: dict[str, Any] = {} if success is None else {"answer": answer}
        key = context = ""
        oracle: OracleInfo | None = None
        if self._t < self._n_chunks:
            start = self._t * self.chunk_facts
            chunk = self.data.facts[start:start + self.chunk_facts]
            context = "\n".join(f"{serial}. {text}" for serial, text in chunk)
            oracle = oracle_info(0, PHASES[0], False, "")
        elif self._t < self._n_steps:
            question = self.data.questions[self._t - self._n_chunks]
            key, context = question.key, question.text
            if question.chain:
                extra["chain"] = list(question.chain)
            extra["qa_pair_id"] = question.qa_pair_id
            if self.action_mode == "choice":
                extra["choices"] = list(self._question_candidates(self._t - self._n_chunks).texts)
            oracle = oracle_info(1, PHASES[1], self._t == self._n_chunks and self._t > 0, question.answers[0])
            oracle["answers"] = list(question.answers)
        if self.info_schema == "fixed":
            own: dict[str, Any] = {} if self.action_mode == "text" else {"choices": "\n".join(extra.get("choices", ()))}
            return fixed_step_info(key=key, context=context, evidence=evidence, t=self._t,  # type: ignore[return-value]
                                   success=success, message=self._last_line if self._t else "", oracle=oracle,
                                   answer=str(answer) if success is not None else "",
                                   qa_pair_id=str(extra.get("qa_pair_id", "")), chain=",".join(extra.get("chain", ())),
                                   **own)
        return step_info(key=key, context=context, evidence=evidence, t=self._t, success=success,
                         oracle=oracle, **extra)
