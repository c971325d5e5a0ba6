"""Report files from a results store: ``tepa-bench report`` and ``sweep --out``.

:func:`write_report` turns a store into the same ``results.json`` /
``results.csv`` / ``drift_metrics.csv`` / ``success.png`` (and ``manifest.json``)
that ``tepa-bench run`` writes, one directory per group of cells.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from tepa_envs.agents.evaluation.analysis.results import Summary
from tepa_envs.agents.evaluation.engine.spec import Statistics
from tepa_envs.agents.evaluation.engine.store import STORE_SCHEMA_VERSION, Store, StoreError
from tepa_envs.agents.evaluation.engine.sweep import GroupReport, store_groups, summarize_group
from tepa_envs.agents.evaluation.outputs.files import begin_run, write_json_atomic, write_manifest
from tepa_envs.agents.evaluation.outputs.report import write_results


def group_dir_name(group: GroupReport) -> str:
    return f"{group.env_id.replace('/', '_')}-{group.group_id[:12]}"


def write_report(store: Store, out: Path, statistics: Statistics | None = None,
                 log: Callable[[str], None] = lambda m: None) -> list[tuple[GroupReport, Summary]]:
    """Write the store's results into ``out`` (every row used is validated first, and a
    damaged one refused with :class:`StoreError` before any file is written): with one group, ``results.json``,
    ``results.csv``, ``drift_metrics.csv``, ``success.png`` and ``manifest.json`` as
    ``tepa-bench run`` writes them; with several, one such directory per group (named
    ``ENV-<group id>``) and ``sweep.json`` listing them. ``elapsed_s`` is the sum of the episodes' wall times.
    Groups without a seed finished by all their methods are skipped (logged)."""
    statistics = statistics or store.statistics()
    try:
        groups = store_groups(store)
    except (TypeError, ValueError) as exc:  # e.g. a seed stored as text in a store opened without check
        if isinstance(exc, StoreError):
            raise
        raise StoreError(f"{store.path} is damaged: its cells or seeds cannot be read "
                         f"({' '.join(str(exc).split())})") from None
    if not groups:
        raise StoreError(f"{store.path} holds no cells: run a sweep into it first")
    written: list[tuple[GroupReport, Summary]] = []
    group_files: list[str] = []
    single = len(groups) == 1
    summaries: list[tuple[GroupReport, Summary]] = []
    for group in groups:  # every row used is checked (Store.evaluation) before a file is touched
        if group.left_out:
            log(f"{group.env_id} {json.dumps(group.env_kwargs)}: {group.left_out} episodes left out "
                f"(seeds not finished by every method); {len(group.seeds)} seeds reported")
        if not group.seeds:
            log(f"{group.env_id} {json.dumps(group.env_kwargs)}: no seed finished by every method; skipped")
            continue
        try:
            summaries.append((group, summarize_group(store, group, statistics)))
        except StoreError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
            raise StoreError(f"{store.path} is damaged: group {group.env_id} {json.dumps(group.env_kwargs)} "
                             f"cannot be summarized ({type(exc).__name__}: {' '.join(str(exc).split())}); "
                             f"`tepa-bench store check {store.path}` lists its problems") from None
    if not summaries:
        raise StoreError(f"{store.path}: no group has a seed that all of its methods finished; nothing to report")
    begin_run(out)
    for group, summary in summaries:
        directory = out if single else out / group_dir_name(group)
        group.directory = "." if single else group_dir_name(group)
        directory.mkdir(parents=True, exist_ok=True)
        begin_run(directory)
        files = write_results(summary, directory)
        group_files += [f"{group.directory}/{name}" for name in (*files, "manifest.json")]
        write_manifest(directory, files, seeds=summary.seeds, methods=summary.methods, env_id=group.env_id,
                       env_kwargs=group.env_kwargs, reader_kwargs=group.reader_kwargs, alpha=statistics.alpha,
                       store=str(store.path), store_schema_version=STORE_SCHEMA_VERSION,
                       group_id=group.group_id, cells={c.label: c.cell_id for c in group.cells})
        written.append((group, summary))
    if not written:
        raise StoreError(f"{store.path}: no group has a seed that all of its methods finished; nothing to report")
    if not single:
        index = {"store_schema_version": STORE_SCHEMA_VERSION, "statistics": statistics.to_json(),
                 "groups": [{"directory": g.directory, "group_id": g.group_id, "env_id": g.env_id,
                             "env_kwargs": g.env_kwargs, "reader_kwargs": g.reader_kwargs,
                             "methods": [c.label for c in g.cells], "cells": [c.cell_id for c in g.cells],
                             "seeds": len(g.seeds), "episodes_left_out": g.left_out} for g, _ in written]}
        write_json_atomic(out / "sweep.json", index)
        files = ["sweep.json"] + group_files
        write_manifest(out, files, seeds=sorted({s for g, _ in written for s in g.seeds}),
                       methods=list(dict.fromkeys(c.label for g, _ in written for c in g.cells)),
                       store=str(store.path), store_schema_version=STORE_SCHEMA_VERSION)
    return written


__all__ = ["group_dir_name", "write_report"]
