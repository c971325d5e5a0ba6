"""One ``info`` schema (issue 32, item 1): with ``info_schema="fixed"`` every registered
environment returns the same keys, value types and shapes at reset, at every step and
at the terminal step, with sentinels (never ``None``) where a value does not apply,
so recorders that stack infos (Minari's pytrees, Tianshou's buffers) take them.
The fixed schema is the default; the rich view (``info_schema="rich"``) is unchanged, and the
evidence list stays available as ``env.unwrapped.last_evidence``."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.core import Evidence
from tepa_envs.core.step_info import (EVIDENCE_FIELDS, FIXED_INFO_KEYS, NO_ORACLE, ORACLE_FIELDS,
                                      check_info_schema, evidence_of)

ENV_IDS = sorted(env_id for env_id in gym.envs.registry if env_id.startswith("TEPA/"))
FACTS = "TEPA/FactConsolidation-v0"
OWN_KEYS = {FACTS: ("answer", "qa_pair_id", "chain")}


def _small(env_id: str) -> dict[str, Any]:
    return {"length": "6k"} if env_id == FACTS else {"phase_lengths": (4, 4, 4, 4)}


def _signature(value: Any, path: str = "info") -> Any:
    """The structure of an info: key sets, leaf types, array shapes and dtypes (``None`` refused)."""
    assert value is not None, f"{path} is None"
    if isinstance(value, dict):
        return {key: _signature(v, f"{path}[{key!r}]") for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_signature(v, f"{path}[{i}]") for i, v in enumerate(value)))
    if isinstance(value, np.ndarray):
        return (np.ndarray, value.shape, value.dtype)
    return type(value)


def _episode(env_id: str, info_schema: str, seed: int = 0, **kwargs: Any):
    """Every (reward, terminated, info, last_evidence) of one episode, reset first, sampled actions."""
    env = gym.make(env_id, **_small(env_id), info_schema=info_schema, **kwargs)
    env.action_space.seed(seed)
    _, info = env.reset(seed=seed)
    out = [(0.0, False, info, env.unwrapped.last_evidence)]
    terminated = False
    while not terminated:
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert not truncated
        out.append((reward, terminated, info, env.unwrapped.last_evidence))
    env.close()
    return out


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_fixed_schema_has_one_structure_at_reset_every_step_and_the_terminal_step(env_id):
    steps = _episode(env_id, "fixed")
    reference = _signature(steps[0][2])
    assert list(steps[0][2])[:len(FIXED_INFO_KEYS)] == list(FIXED_INFO_KEYS)
    assert set(steps[0][2]) == set(FIXED_INFO_KEYS) | set(OWN_KEYS.get(env_id, ("forfeited",)))
    assert tuple(reference["evidence"]) == EVIDENCE_FIELDS and tuple(reference["oracle"]) == ORACLE_FIELDS
    for i, (_, _, info, _) in enumerate(steps):
        assert _signature(info) == reference, f"step {i}"
    reset, terminal = steps[0][2], steps[-1][2]
    assert reset["scored"] is False and reset["success"] is False and reset["message"] == ""
    assert reset["evidence"] == {"count": 0, "key": "", "value": "", "t": -1, "outcome": -1, "source": ""}
    assert terminal["oracle"] == NO_ORACLE and terminal["key"] == ""


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_fixed_schema_reports_the_rich_views_step_exactly(env_id):
    """Same seed and actions: same rewards; the fixed fields are the rich info's values,
    and ``last_evidence`` is the rich evidence list in both schemas."""
    fixed, rich = _episode(env_id, "fixed"), _episode(env_id, "rich")
    assert len(fixed) == len(rich)
    for i, ((reward, done, f, f_evidence), (rich_reward, rich_done, r, r_evidence)) in enumerate(zip(fixed, rich)):
        where = f"step {i}"
        assert (reward, done) == (rich_reward, rich_done), where
        assert f_evidence == r_evidence == tuple(r["evidence"]), where
        assert evidence_of(r) == r_evidence and all(isinstance(e, Evidence) for e in r_evidence)
        assert (f["key"], f["context"], f["t"]) == (r["key"], r["context"], r["t"]), where
        assert f["scored"] is ("success" in r), where
        assert f["success"] is bool(r.get("success", False)) and f["success"] is (reward == 1.0 and f["scored"])
        assert f["evidence"]["count"] == len(r_evidence), where
        if r_evidence:
            first = r_evidence[0]
            assert (f["evidence"]["key"], f["evidence"]["value"], f["evidence"]["t"], f["evidence"]["source"]) == \
                (first.key, first.value, first.t, first.source), where
            assert f["evidence"]["outcome"] == (-1 if first.outcome is None else int(first.outcome)), where
        if "oracle" in r:
            assert f["oracle"] == {k: r["oracle"][k] for k in ORACLE_FIELDS}, where
        else:
            assert f["oracle"] == NO_ORACLE, where
        if env_id != FACTS:
            assert f["message"] == r.get("message", ""), where


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0"])
def test_forfeited_tasks_keep_the_structure(env_id):
    env = gym.make(env_id, **_small(env_id), info_schema="fixed", trial_cost="task")
    _, info = env.reset(seed=1)
    reference = _signature(info)
    env.unwrapped.trial("support", info["key"], env.unwrapped.choices(info["key"])[0])
    _, reward, _, _, info = env.step(0)
    assert info["forfeited"] is True and info["scored"] is True and info["success"] is False
    assert info["evidence"]["count"] == 0 and env.unwrapped.last_evidence == () and reward == 0.0
    assert _signature(info) == reference
    env.close()


def test_facts_scores_only_questions_in_both_schemas():
    fixed = _episode(FACTS, "fixed")
    scored = [info["scored"] for _, _, info, _ in fixed]
    n_chunks = sum(1 for _, _, info, _ in fixed[:-1] if info["oracle"]["phase"] == 0)
    assert scored == [False] * (n_chunks + 1) + [True] * (len(fixed) - n_chunks - 1)
    assert all(info["answer"] == "" for _, _, info, _ in fixed[:n_chunks + 1])
    assert fixed[1][2]["evidence"]["count"] == len(fixed[1][3]) > 1  # a chunk: the count and the first fact


def _tree_paths(value: Any, path: tuple = ()) -> list[tuple[tuple, type]]:
    """Leaves of a pytree (dicts, lists and tuples are nodes), as Minari's collector walks infos."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _tree_paths(value[key], path + (key,))]
    if isinstance(value, (list, tuple)):
        return [(path + ("#len",), len(value))] + [leaf for i, v in enumerate(value) for leaf in _tree_paths(v, path + (i,))]
    return [(path, type(value))]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_fixed_infos_stack_like_minari_and_tianshou_stack_them(env_id):
    """What failed in the issue: a recorder that stacks every leaf of every info across
    reset and steps (one pytree structure, no ``None``, no ``NaN`` from a missing key)."""
    steps = _episode(env_id, "fixed")
    structures = {tuple(_tree_paths(info)) for _, _, info, _ in steps}
    assert len(structures) == 1
    for path, kind in structures.pop():
        values = [_get(info, path) for _, _, info, _ in steps]
        stacked = np.array(values)
        assert stacked.dtype != object and stacked.shape == (len(steps),), path
        if np.issubdtype(stacked.dtype, np.floating):
            assert not np.isnan(stacked).any(), path


def _get(info: dict, path: tuple) -> Any:
    for key in path:
        info = info[key]
    return info


def test_fixed_infos_batch_identically_under_sync_vector_env():
    envs = gym.make_vec("TEPA/FileOps-v0", num_envs=2, vectorization_mode="sync", phase_lengths=(3, 3, 3, 3),
                        info_schema="fixed")
    _, infos = envs.reset(seed=0)
    keys = set(infos)
    for _ in range(14):  # crosses the terminal step and the autoreset
        _, _, _, _, infos = envs.step(envs.action_space.sample())
        assert set(infos) == keys and infos["_oracle"].all() and infos["_scored"].all()
    envs.close()


def test_the_native_vector_env_batches_one_structure_at_every_step():
    """The native vector env's infos keep one structure (keys, masks, dtypes) from reset
    through terminal steps and autoresets, as Minari-style recorders need."""
    envs = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=3, phase_lengths=(2, 2, 2, 2), key_noise=0.5)
    _, info = envs.reset(seed=0)
    first = _signature(info)
    for _ in range(20):
        _, _, _, _, info = envs.step(np.array([0, 1, 2]))
        assert _signature(info) == first
    envs.close()
    with pytest.raises(ValueError, match="info_schema"):
        gym.make_vec("TEPA/RegimeDrift-v0", num_envs=2, info_schema="flat")


@pytest.mark.parametrize("bad, error", [("flat", ValueError), (1, TypeError)])
def test_info_schema_is_checked(bad, error):
    with pytest.raises(error, match="info_schema"):
        check_info_schema(bad)
    with pytest.raises(error, match="info_schema"):
        gym.make("TEPA/RegimeDrift-v0", info_schema=bad)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_default_is_the_fixed_schema_and_rich_stays_available(env_id):
    default = gym.make(env_id, **_small(env_id))
    _, info = default.reset(seed=0)
    assert default.unwrapped.info_schema == "fixed" and tuple(info)[:len(FIXED_INFO_KEYS)] == FIXED_INFO_KEYS
    rich = gym.make(env_id, **_small(env_id), info_schema="rich")
    _, info = rich.reset(seed=0)
    assert info["evidence"] == [] and "scored" not in info
    default.close()
    rich.close()


def test_evidence_of_a_fixed_info_needs_the_env():
    env = gym.make("TEPA/RegimeDrift-v0", info_schema="fixed")
    env.reset(seed=0)
    _, _, _, _, info = env.step(0)
    assert evidence_of(info, env) == env.unwrapped.last_evidence and len(env.unwrapped.last_evidence) == 1
    with pytest.raises(ValueError, match="last_evidence"):
        evidence_of(info)
    env.close()


def test_memory_observation_reads_either_schema_alike():
    from tepa_envs.wrappers import MemoryObservation

    outs = []
    for schema in ("rich", "fixed"):
        env = MemoryObservation(gym.make("TEPA/RegimeDrift-v0", phase_lengths=(6, 6, 6, 6), info_schema=schema), "tepa")
        env.action_space.seed(3)
        observation, _ = env.reset(seed=3)
        trace = [observation]
        for _ in range(24):
            observation, *_ = env.step(env.action_space.sample())
            trace.append(observation)
        outs.append(trace)
        env.close()
    for a, b in zip(*outs):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    assert any(o["memory_validity"][0] > 0 for o in outs[1])  # the memory did learn from the fixed schema


def test_fixed_schema_check_env_with_warnings_as_errors():
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for env_id in ENV_IDS:
            env = gym.make(env_id, **_small(env_id), info_schema="fixed")
            check_env(env.unwrapped)
            env.close()


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-ManyKeys-v0", "TEPA/PreferenceStream-v0",
                                    "TEPA/FileOps-v0"])
@pytest.mark.parametrize("method", ["tepa", "two-strike", "oracle-reset"])
def test_the_agent_loop_reads_both_schemas_alike(env_id, method):
    """The one episode loop (scoring, evidence, the oracle hook) gives the same episode
    whether the environment reports the rich or the fixed info."""
    from tepa_envs.agents import MemoryAgent, run_episode

    results = []
    for schema in ("rich", "fixed"):
        env = gym.make(env_id, info_schema=schema, **({"phase_lengths": (5, 5, 5, 5)} if "FileOps" in env_id else {}))
        try:
            results.append(run_episode(env, MemoryAgent(method), seed=4))
        finally:
            env.close()
    assert len(results[0].success) > 0
    assert np.array_equal(results[0].success, results[1].success) and results[0].keys == results[1].keys
