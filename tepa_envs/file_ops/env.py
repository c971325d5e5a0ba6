"""TEPA/FileOps-v0: executable drift with real files written into a contained sandbox."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from typing import Any, Mapping

import numpy as np

from tepa_envs.core import Evidence, check_choice, check_int, check_positive_int, check_probability
from tepa_envs.core.checks import check_phase_lengths
from tepa_envs.core.drift import DriftSchedule, draw_timeline, refuse_outcome_model, resolve_schedule
from tepa_envs.file_ops.formats import (DOMAINS, FORMATS, WRITER_CONFIGS, Table, configs_of, consume, draw_numbers,
                           format_of, make_table, record_values, write_table)
from tepa_envs.file_ops.sandbox import Sandbox, SandboxError, default_sandbox_parent, install_sigterm_cleanup
from tepa_envs.core.step_info import DEFAULT_INFO_SCHEMA
from tepa_envs.core.notify import DEFAULT_DETECT_DELAY, DEFAULT_FALSE_ALARM_RATE, DEFAULT_NOTIFY, check_notify
from tepa_envs.core.contracts import DriftPhases
from tepa_envs.core.stream import Outcome, Task, TaskStreamEnv, check_observe_truth

EXTENSIONS = {"csv": "csv", "json": "json"}
MAX_RECORDS = 1000
"""Largest ``max_records`` (records per table): a table of 1,000 records exports
to well under the default per-file quota of 256 KiB."""
MAX_EPISODE_RECORDS = 10**6
"""Largest ``sum(phase_lengths) * max_records``: the records drawn at ``reset``
(five values each; about 300 MB and 2.5 s at the bound)."""


def required_files(n_domains: int) -> int:
    """Entries the sandbox must allow for the environment's own layout: the ``outbox``
    and ``trials`` directories and, in each, one CSV and one JSON file per domain."""
    return 2 + 2 * len(EXTENSIONS) * n_domains


def check_sandbox_dir(sandbox_dir: object) -> str:
    """Validate a ``sandbox_dir``: an existing directory this process can create a
    sandbox in (checked by creating and removing a probe directory)."""
    if isinstance(sandbox_dir, os.PathLike):
        sandbox_dir = os.fspath(sandbox_dir)
    if not isinstance(sandbox_dir, str):
        raise TypeError(f"sandbox_dir must be a str or a path, got {type(sandbox_dir).__name__}")
    if not os.path.isdir(sandbox_dir):
        raise ValueError(f"sandbox_dir must be an existing directory, got {sandbox_dir!r}")
    if not os.access(sandbox_dir, os.W_OK | os.X_OK):
        raise ValueError(f"sandbox_dir must be writable, got {sandbox_dir!r}")
    try:
        os.rmdir(tempfile.mkdtemp(prefix="tepa-probe-", dir=sandbox_dir))
    except OSError as exc:
        raise ValueError(f"sandbox_dir {sandbox_dir!r} cannot hold a sandbox: "
                         f"{exc.strerror or exc} ({type(exc).__name__})") from None
    return sandbox_dir


def export_keys(n_domains: int) -> tuple[str, ...]:
    """Conflict keys ``export/<domain>/<format>`` for the first ``n_domains`` domains."""
    check_int("n_domains", n_domains, low=1, high=len(DOMAINS))
    return tuple(f"export/{d}/{f}" for d in DOMAINS[:n_domains] for f in FORMATS)


class FileOpsEnv(DriftPhases, TaskStreamEnv):
    """
    ## Description

    A stream of export tasks. Each task asks the agent to export a small table
    of records (3 to 6 by default, generated from the seed) of one domain as
    CSV or as JSON. The action picks a writer configuration; the environment
    really writes the file into its private :class:`~tepa_envs.file_ops.sandbox.Sandbox`
    with Python's ``csv``/``json`` writers, and a downstream consumer, also
    real code, reads it back with the configuration the hidden regime expects
    and validates the records. The task succeeds only when the consumer
    accepts the file and gets the same records back (same fields, same values,
    same types). The conflict key is ``export/<domain>/<format>``.

    The CSV consumers drift over the four phases; the JSON consumers never
    change and serve as the control:

    1. **stable**: each CSV key has an accepted dialect.
    2. **light drift**: a ``light_drift_fraction`` of CSV keys switch dialect.
    3. **full reversal**: every CSV key switches to a dialect it has not had.
    4. **partial return**: a ``partial_return_fraction`` of CSV keys return to
       their stable dialect; the rest keep the reversed one.

    Each task is a CSV task with probability ``csv_fraction``, otherwise a JSON
    task; its domain is uniform over the first ``n_domains`` domains.

    Any other drift of the CSV consumers is a ``schedule``
    (:mod:`tepa_envs.core.drift`): segments that switch, return or keep the CSV
    keys' dialects, gradually (``ramp``), asynchronously (``spread``) or at random
    change points (``hazard``), e.g. ``schedule="recurring"`` or ``"poisson"``.
    Noisy outcomes and Zipf key frequency do not apply (the consumer decides every
    outcome; tasks pick their key by ``csv_fraction`` and a uniform domain).

    ## Action Space

    ``Discrete(6)``: the writer configuration, one of ``csv:comma``,
    ``csv:semicolon``, ``csv:tab``, ``json:array`` (a JSON array of records),
    ``json:lines`` (one JSON object per line), ``json:envelope`` (an object
    ``{"domain", "count", "records"}``). :meth:`choices` offers a language
    agent only the three configurations of the task's format; a configuration
    of the other format is written as asked and rejected by the consumer.

    ## Observation Space

    ``MultiDiscrete([n_keys, 7, 2])``: the index of the task's key, the
    configuration used in the previous step (6 before the first step) and
    whether it was accepted. The accepted configuration is never observable.

    With ``notify="known"`` or ``"detected"`` the observation gains one component of
    size 2 after these: ``1`` when the change flag is raised on the task now
    presented (``info["notified"]``), else ``0``. With ``observe_truth=True`` (the
    ``*-MDP-v0`` twins) it gains, last, a component of size ``6 + 1``: the index
    of the presented task's correct configuration (in the action order) (the one ``info["oracle"]["correct"]``
    names; ``6`` at the terminal step). So the space is ``MultiDiscrete(nvec)``
    with ``nvec`` the list above, then ``2`` when notified, then ``6 + 1`` for a twin.

    ## Rewards

    1.0 when the consumer accepts the file and reads back the same records,
    0.0 otherwise.

    ## Episode End

    Terminates after the last task of the partial-return phase
    (``sum(phase_lengths)`` steps; with another ``schedule``, of its last phase).
    There is no truncation.

    ## Evidence

    A step reveals one :class:`~tepa_envs.core.Evidence`: the configuration
    used, whether the consumer accepted the file and ``source="consumer"``.
    The consumer's own message (e.g. ``JSONDecodeError: Extra data: line 2
    column 1 (char 95)`` from ``json``, or ``Rejected: header mismatch:
    expected [...], got ['id;account;...']``) is in ``info["message"]`` and in the
    next task's ``info["context"]``. Nothing reveals which configuration
    would have been accepted. :meth:`trial` writes and consumes a held-out
    table of the key's domain without advancing the stream.

    ## Sandbox

    ``env.unwrapped.sandbox`` is created at ``reset`` (a fresh private
    temporary directory each episode) and removed at ``close``, at garbage
    collection, at interpreter exit, and when a step raises. The environment
    installs no signal handler; a program that wants its sandboxes removed on
    SIGTERM opts in with :func:`tepa_envs.file_ops.install_sigterm_cleanup`
    (``tepa-bench`` does). The sandbox of a process killed outright (or by SIGTERM
    without the opt-in) is removed by the next sandbox created in the same
    directory, or by ``tepa-bench clean`` (see :mod:`tepa_envs.file_ops.sandbox`). Each export is written to
    ``outbox/<domain>.<csv|json>``, replacing the previous one; trials write to
    ``trials/``.

    ## Info

    With ``info_schema="fixed"`` every ``info`` (reset, every step, the terminal
    step) has the same keys with values of fixed type, sentinels where a value does
    not apply (:mod:`tepa_envs.core.step_info`): ``key`` (str, ``""``),
    ``context`` (str, ``""``), ``t`` (int), ``scored`` (bool, ``False`` at reset),
    ``success`` (bool, ``False`` unless scored), ``message`` (str, ``""``),
    ``evidence`` (``{"count", "key", "value", "t", "outcome", "source"}``: the
    number of evidence and the first one, ``outcome`` 1 / 0 / -1; ``0, "", "",
    -1, -1, ""`` when none), ``oracle`` (``{"phase", "phase_name",
    "phase_changed", "correct"}``; ``-1, "", False, ""`` at the terminal step) and
    ``forfeited`` (bool). With ``"rich"`` (the variable view)
    ``evidence`` is the list of :class:`~tepa_envs.core.Evidence`, ``success`` and
    ``message`` are present only after a step, ``oracle`` only while a task is
    presented and ``forfeited`` only with ``trial_cost="task"``. Either way
    ``env.unwrapped.last_evidence`` is the last step's evidence list. With ``notify="known"`` or ``"detected"``
    every ``info`` of either schema also has ``notified`` (bool: the change flag of the
    task now presented, ``False`` at reset's first presentation of a key and at the
    terminal step); with ``notify="none"`` (default) the key is absent.

    ## Rendering

    ``metadata["render_modes"]`` is ``["ansi", "human", "rgb_array"]``
    (``render_fps`` 4). ``"rgb_array"`` frames are ``uint8`` arrays of shape
    ``(256, 512, 3)`` (:data:`~tepa_envs.core.render.FRAME_SHAPE`): the task now
    presented, the last step, the recent outcomes and the phase timeline with a
    cursor at ``t``, so ``gymnasium.wrappers.RecordVideo`` records episodes.

    ## Arguments

    * ``phase_lengths``: tasks in each of the four phases (default ``(40, 40, 40, 40)``):
      a tuple or list of four ints, each from 1 to ``MAX_PHASE_LENGTH`` (10**6).
    * ``n_domains``: domains, each with a CSV and a JSON key (default 1, at most 6,
      the domains with a schema; each extra domain adds one more CSV key to
      relearn after every change).
    * ``csv_fraction``: probability that a task asks for CSV (default 0.85).
    * ``light_drift_fraction``: fraction of CSV keys that change in light drift (default 0.5).
    * ``partial_return_fraction``: fraction of CSV keys that return (default 0.5).
    * ``min_records``, ``max_records``: records per table (default 3 and 6;
      each at most ``MAX_RECORDS`` = 1,000, and
      ``sum(phase_lengths) * max_records``, the records drawn at each reset, at
      most ``MAX_EPISODE_RECORDS`` = 10**6).
    * ``max_file_bytes``, ``max_total_bytes``, ``max_files``: sandbox quotas
      (default 256 KiB, 4 MiB and 256 entries; an export is under 1 KiB).
      ``max_files`` must leave room for the environment's own layout,
      ``2 + 4 * n_domains`` entries (the ``outbox`` and ``trials`` directories
      and a CSV and a JSON file per domain in each).
    * ``sandbox_dir``: the directory the sandbox's temporary directory is made
      in (default: ``/dev/shm`` when usable and ``TMPDIR`` is unset, else the
      system's temporary directory; on a disk-backed ``/tmp`` a step took
      about twice as long in ``benchmarks/fileops_throughput.py``). It must be
      an existing directory where this process can create one: the constructor
      creates and removes a probe directory in it.
    * ``trial_cost``: what a held-out :meth:`trial` costs: ``"free"`` (default)
      or ``"task"`` (each trial forfeits one task of the stream, for an
      equal-budget comparison; details in :class:`~tepa_envs.core.stream.TaskStreamEnv`).
    * ``render_mode``: ``None``, ``"ansi"`` (the last step as a line of text),
      ``"human"`` (that line printed to stdout at every step) or ``"rgb_array"`` (a
      ``uint8`` picture of the stream, see "Rendering"); any other mode is accepted,
      as in Gymnasium's own environments, and ``render()`` then warns and returns ``None``.
    * ``info_schema``: ``"fixed"`` (default) or ``"rich"``, see "Info".
    * ``notify``: change notification (:mod:`tepa_envs.core.notify`): ``"none"``
      (default: nothing is told, everything exactly as without the argument),
      ``"known"`` (a flag on the first task that presents a key after a true change
      of its correct value) or ``"detected"`` (the same flag from a noisy detector,
      see ``detect_delay`` and ``false_alarm_rate``). With ``"known"`` or
      ``"detected"`` the observation gains the flag and every ``info`` the key
      ``notified``; see "Observation Space" and "Info".
    * ``detect_delay``: with ``notify="detected"``, the mean of the detector's
      geometric delay in presentations of the changed key (default 1.0; 0 flags
      every change on its first task; at most 1000). Checked, and ignored, at the
      other levels.
    * ``false_alarm_rate``: with ``notify="detected"``, the probability that a
      presentation of a key (after its first) raises a false alarm (default 0.02,
      in [0, 1]). Checked, and ignored, at the other levels.
    * ``observe_truth``: ``True`` makes the fully observed twin (the ``*-MDP-v0``
      ids register it): the observation gains, last, the index of the presented
      task's correct value (default ``False``); see "Observation Space".
    * ``cleanup_on_sigterm``: ``True`` opts in to removing the sandbox when the process
      is sent SIGTERM: each ``reset`` in the main thread calls
      :func:`~tepa_envs.file_ops.sandbox.install_sigterm_cleanup`, which installs a
      process-wide handler when SIGTERM has none (default ``False``: the environment
      installs no signal handler). Meant for processes the program does not run itself,
      such as the workers of ``gym.make_vec(..., vectorization_mode="async")``, which
      ``close(terminate=True)`` ends with SIGTERM; elsewhere a program calls
      ``install_sigterm_cleanup()`` itself.
    * ``schedule``: the CSV consumers' drift: ``"paper"`` (default, the four
      phases above), another preset of :data:`~tepa_envs.core.drift.PRESETS` built
      over ``phase_lengths`` (``"gradual"``, ``"async"``, ``"recurring"``,
      ``"poisson"``; ``"noisy"`` and ``"zipf"`` are refused), or a
      :class:`~tepa_envs.core.drift.DriftSchedule` or its dict form, which sets its
      own segments (at most ``MAX_SEGMENTS`` = 1000 of at most ``MAX_PHASE_LENGTH``
      tasks); ``phase_lengths`` and the fractions must then keep their defaults.

    The defaults follow the paper's executable-drift setting: one domain, so
    one CSV consumer whose accepted dialect drifts (about one key changes per
    phase), and a stable JSON consumer as the control. Most exports (85%) go
    to the drifting CSV consumer, the workload under test; the JSON tasks
    (about 6 per phase) are the control sample.
    """

    def __init__(self, phase_lengths: tuple[int, int, int, int] = (40, 40, 40, 40),
                 n_domains: int = 1, csv_fraction: float = 0.85, light_drift_fraction: float = 0.5,
                 partial_return_fraction: float = 0.5, min_records: int = 3, max_records: int = 6,
                 max_file_bytes: int = 256 << 10, max_total_bytes: int = 4 << 20, max_files: int = 256,
                 sandbox_dir: str | None = None, render_mode: str | None = None,
                 trial_cost: str = "free", schedule: str | DriftSchedule | Mapping[str, Any] = "paper",
                 info_schema: str = DEFAULT_INFO_SCHEMA, notify: str = DEFAULT_NOTIFY,
                 detect_delay: float = DEFAULT_DETECT_DELAY, false_alarm_rate: float = DEFAULT_FALSE_ALARM_RATE,
                 observe_truth: bool = False, cleanup_on_sigterm: bool = False) -> None:
        check_notify(notify, detect_delay, false_alarm_rate)  # refused before any state changes
        check_observe_truth(observe_truth)
        if not isinstance(cleanup_on_sigterm, bool):
            raise TypeError(f"cleanup_on_sigterm must be a bool, got {type(cleanup_on_sigterm).__name__}")
        phase_lengths = check_phase_lengths(phase_lengths)  # a dict or a huge length: refused before any allocation
        self.cleanup_on_sigterm = cleanup_on_sigterm
        self.keys = export_keys(n_domains)
        self.n_domains = n_domains
        self.csv_fraction = check_probability("csv_fraction", csv_fraction)
        self.light_drift_fraction = check_probability("light_drift_fraction", light_drift_fraction)
        self.partial_return_fraction = check_probability("partial_return_fraction", partial_return_fraction)
        self.drift = refuse_outcome_model(
            resolve_schedule(schedule, phase_lengths, self.light_drift_fraction, self.partial_return_fraction),
            "TEPA/FileOps-v0", "a real consumer decides every outcome, and tasks pick CSV or JSON by csv_fraction "
            "and a uniform domain")
        self.min_records = check_int("min_records", min_records, low=1, high=MAX_RECORDS)
        self.max_records = check_int("max_records", max_records, low=self.min_records, high=MAX_RECORDS)
        if self.drift.total * self.max_records > MAX_EPISODE_RECORDS:
            raise ValueError(f"sum(phase_lengths) * max_records must be <= {MAX_EPISODE_RECORDS:,} (the records "
                             f"drawn at each reset), got {self.drift.total} * {self.max_records}; "
                             "use shorter phases or fewer records per table")
        needed = required_files(len(self.keys) // len(FORMATS))
        if check_positive_int("max_files", max_files) < needed:
            raise ValueError(f"max_files must be >= {needed} with n_domains={n_domains} (the outbox and trials "
                             f"directories and a CSV and a JSON file per domain in each), got {max_files}")
        if sandbox_dir is not None and sandbox_dir != "":
            sandbox_dir = check_sandbox_dir(sandbox_dir)
        self.sandbox = Sandbox(max_file_bytes=max_file_bytes, max_total_bytes=max_total_bytes,
                               max_files=max_files, parent_dir=sandbox_dir or default_sandbox_parent())
        super().__init__(self.drift, WRITER_CONFIGS, render_mode, trial_cost=trial_cost,
                         info_schema=info_schema, notify=notify, detect_delay=detect_delay,
                         false_alarm_rate=false_alarm_rate, observe_truth=observe_truth)
        self.observation_space = self._observation_space([len(self.keys), len(self.values) + 1, 2])
        self._key_index = {k: i for i, k in enumerate(self.keys)}
        self._previous = (len(self.values), 0)
        self._feedback = ""
        self._executing = False

    # ------------------------------------------------------------- the world
    def _build(self, rng: np.random.Generator) -> None:
        total, n = self.schedule.total, self.n_domains
        n_configs = len(configs_of("csv"))
        self.csv_timeline = draw_timeline(rng, self.drift, n, n_configs)
        self.csv_regime = self.csv_timeline.values
        self.json_accepted = rng.integers(0, len(configs_of("json")), size=n)
        self.task_is_csv = rng.random(total) < self.csv_fraction
        self.task_domains = rng.integers(0, n, size=total)
        self.task_sizes = rng.integers(self.min_records, self.max_records + 1, size=total)
        self.task_values = record_values(self.task_domains, draw_numbers(rng, total, self.max_records))
        # Drawn last, so trials never touch the numbers the stream uses.
        self.trial_values = record_values(np.arange(n), draw_numbers(rng, n, self.max_records))
        self._ramp_draw = self.drift.draw_ramp(rng)  # only for gradual changes (no draw otherwise)
        self._table_cache: tuple[int, Table | None] = (-1, None)
        if self.cleanup_on_sigterm and threading.current_thread() is threading.main_thread():
            install_sigterm_cleanup()
        self.sandbox.reset()
        self._previous = (len(self.values), 0)
        self._feedback = ""

    def _key_parts(self, key: str) -> tuple[int, str] | None:
        index = self._key_index.get(key)
        if index is None:
            return None
        return index // len(FORMATS), FORMATS[index % len(FORMATS)]

    def accepted_config(self, key: str, t: int | None = None) -> str:
        """The configuration the hidden consumer of ``key`` accepts at task ``t``
        (default: now). For evaluation and tests only."""
        parts = self._key_parts(check_choice("key", key, self._key_index))
        assert parts is not None
        domain, fmt = parts
        t = self.t if t is None else t
        index = self.csv_timeline.value(t, domain, self._ramp_draw) if fmt == "csv" else self.json_accepted[domain]
        return configs_of(fmt)[int(index)]

    def _table(self, t: int) -> Table:
        cached_t, table = self._table_cache
        if cached_t != t or table is None:
            domain = DOMAINS[int(self.task_domains[t])]
            table = make_table(domain, self.task_values[t], int(self.task_sizes[t]))
            self._table_cache = (t, table)
        return table

    def _task_key(self, t: int) -> str:
        fmt = "csv" if self.task_is_csv[t] else "json"
        return f"export/{DOMAINS[int(self.task_domains[t])]}/{fmt}"

    # ------------------------------------------------------------ the stream
    def _present(self, t: int) -> Task:
        key = self._task_key(t)
        _, domain, fmt = key.split("/")
        table = self._table(t)
        context = (f"Request #{t}: export {len(table.records)} {domain} records "
                   f"(fields: {', '.join(table.fields)}) as {fmt.upper()} for the downstream consumer. "
                   f"Writer configurations: {', '.join(configs_of(fmt))}. Pick one.")
        if self._feedback:
            context += f" {self._feedback}"
        return Task(key, context, self.accepted_config(key, t))

    def _execute(self, t: int, task: Task, value: str) -> Outcome:
        self._executing = True
        table = self._table(t)
        path = f"outbox/{table.domain}.{EXTENSIONS[format_of(value)]}"
        accepted, message = self._deliver(path, value, table, task.correct)
        self._previous = (self.to_action(value), int(accepted))
        verdict = "accepted" if accepted else "rejected"
        self._feedback = f"Previous export ({task.key} with {value}) was {verdict} by the consumer: {message}"
        return Outcome(accepted, (Evidence(task.key, value, t, accepted, "consumer"),), message)

    def _deliver(self, path: str, config: str, table: Table, expected: str) -> tuple[bool, str]:
        """Write ``table`` with ``config`` (replacing the previous export at ``path``)
        and let the consumer expecting ``expected`` read it back."""
        self.sandbox.write(path, write_table(config, table))
        return consume(expected, table, self.sandbox.read(path))

    def _trial(self, key: str, value: str) -> bool:
        parts = self._key_parts(key)
        if parts is None or value not in WRITER_CONFIGS:
            return False
        domain, fmt = parts
        table = make_table(DOMAINS[domain], self.trial_values[domain], self.max_records)
        path = f"trials/{DOMAINS[domain]}.{EXTENSIONS[format_of(value)]}"
        try:
            accepted, _ = self._deliver(path, value, table, self.accepted_config(key))
        except BaseException as exc:
            self._discard_sandbox(exc)
            raise
        return accepted

    def _observation(self, t: int, task: Task | None) -> np.ndarray:
        key_index = self._key_index[task.key] if task is not None else 0
        if t == 0:
            self._previous = (len(self.values), 0)
        return np.array([key_index, *self._previous], dtype=np.int64)

    # ----------------------------------------------------- language agents
    def choices(self, key: str) -> tuple[str, ...]:
        """The writer configurations of the key's format (all of them for an unknown key)."""
        parts = self._key_parts(key)
        return self.values if parts is None else configs_of(parts[1])

    # ------------------------------------------------------------ lifecycle
    def step(self, action: Any):
        self._executing = False
        try:
            return super().step(action)
        except BaseException as exc:
            if self._executing:  # the step had started writing: discard the sandbox
                self._discard_sandbox(exc)
            raise
        finally:
            self._executing = False

    def _discard_sandbox(self, exc: BaseException) -> None:
        """Close after a failed step or trial; ``exc`` stays the error raised, and what
        the sandbox could not remove is noted on it (Python 3.11+)."""
        try:
            self.close()
        except SandboxError as close_error:
            if sys.version_info >= (3, 11):
                exc.add_note(f"closing the sandbox: {close_error}")

    def close(self) -> None:
        """Remove the sandbox (a :class:`SandboxError` names anything it could not
        remove; the environment is closed all the same)."""
        try:
            self.sandbox.close()
        finally:
            self._task = None
            super().close()

    def regime_table(self) -> dict[str, list[str]]:
        """The accepted configuration at the start of each phase for every key, for evaluation and tests only."""
        starts = self.schedule.starts
        return {key: [self.accepted_config(key, s) for s in starts] for key in self.keys}
