"""Reader profiles: versioned data for the simulated reader, the default one reproducing
today's episodes exactly, each dimension doing what it says."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents import MemoryAgent, run_episode
from tepa_envs.agents.memories.registry import make_memory
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.profile import (
    PROFILES, ReaderProfile, load_profile, profile_from_dict, read_profile_file, shipped_profiles, write_profile,
)
from tepa_envs.core import LifecycleState, Record

CHOICES = ["a", "b", "c", "d"]


def record(value: str, score: float = 0.5) -> Record:
    return Record("k", value, 3, 0, LifecycleState.ACTIVE, 0, 0, score)


def success(env_id: str, method: str, reader: EvidenceReader, seed: int) -> np.ndarray:
    env = gym.make(env_id)
    try:
        return run_episode(env, MemoryAgent(method, reader), seed).success
    finally:
        env.close()


def test_every_headline_profile_is_shipped_and_loads():
    assert set(PROFILES) <= set(shipped_profiles())
    for name in PROFILES:
        profile = load_profile(name)
        assert profile.name == name and profile.source


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/PreferenceStream-v0"])
@pytest.mark.parametrize("method", ["tepa", "append-only", "lww", "no-memory"])
def test_default_profile_gives_exactly_the_episodes_of_the_default_reader(env_id, method):
    profiled = EvidenceReader(**load_profile("default").reader_kwargs())
    for seed in range(3):
        assert np.array_equal(success(env_id, method, profiled, seed), success(env_id, method, EvidenceReader(), seed))


def test_never_explore_makes_every_memory_tie_where_the_default_reader_separates_them():
    """The issue's finding, as a guard: with a reader that never explores when nothing is
    shown, the memories barely differ on controlled drift; with the default reader they do."""
    methods = ("no-memory", "append-only", "lww", "tepa")
    means = {}
    for name in ("never-explore", "default"):
        kwargs = load_profile(name).reader_kwargs()
        means[name] = [np.mean([success("TEPA/RegimeDrift-v0", m, EvidenceReader(**kwargs), s).mean()
                                for s in range(12)]) for m in methods]
    assert max(means["never-explore"]) - min(means["never-explore"]) < 0.1, means
    assert max(means["default"]) - min(means["default"]) > 0.4, means


def test_each_kind_of_prompt_has_its_own_follow_probability():
    reader = EvidenceReader(follow_prob=1.0, follow_conflict=0.0, follow_validity=1.0)
    reader.reset(0)
    assert reader.choose([record("b")], CHOICES) == "b"
    strays = [reader.choose([record("b"), record("c")], CHOICES) for _ in range(200)]
    assert strays.count("b") < 100  # conflicting records are never followed: uniform exploration
    reader.bind_memory(make_memory("tepa"))
    assert reader.validity_shown
    reader.follow_validity = 0.0
    picks = [reader.choose([record("b", 0.9)], CHOICES) for _ in range(200)]
    assert 20 < picks.count("b") < 90  # only the uniform explorer picks b (1 in 4)
    reader.bind_memory(make_memory("lww"))
    assert not reader.validity_shown


def test_empty_memory_fallbacks():
    never = EvidenceReader(empty_explore_prob=0.0)
    never.reset(1)
    assert {never.choose([], CHOICES) for _ in range(50)} == {"a"}
    repeat = EvidenceReader(follow_prob=1.0, empty_explore_prob=0.0, empty_fallback="repeat")
    repeat.reset(1)
    assert repeat.choose([record("c")], CHOICES) == "c"
    assert repeat.choose([], CHOICES) == "c"
    assert repeat.choose([], ["x", "y"]) == "x"  # its last choice is not one of this task's
    explorer = EvidenceReader()
    explorer.reset(1)
    assert len({explorer.choose([], CHOICES) for _ in range(200)}) == 4


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_profile_files_round_trip(tmp_path, suffix):
    profile = ReaderProfile("measured", follow_plain=0.8, follow_validity=0.2, follow_conflict=0.9, stated_prob=0.3,
                            empty_explore_prob=0.25, source="a test", intervals={"follow_plain": (0.7, 0.9)},
                            counts={"follow_plain": 40})
    path = tmp_path / f"p{suffix}"
    if suffix == ".toml":
        write_profile(profile, path)
    else:
        path.write_text(json.dumps(profile.to_dict()))
    assert load_profile(str(path)) == profile
    assert read_profile_file(path).reader_kwargs()["follow_validity"] == 0.2


@pytest.mark.parametrize("data, error, field", [
    ({"name": "x", "follow_plain": 1.5}, ValueError, "follow_plain"),
    ({"name": "x", "follow_plain": "high"}, TypeError, "follow_plain"),
    ({"name": "x", "empty_fallback": "random"}, ValueError, "empty_fallback"),
    ({"name": "x", "version": 2}, ValueError, "version"),
    ({"name": "x", "colour": "red"}, ValueError, "colour"),
    ({"follow_plain": 0.5}, ValueError, "name"),
    ({"name": "x", "intervals": {"follow_plain": [0.9, 0.1]}}, ValueError, "intervals.follow_plain"),
    ({"name": "x", "counts": {"follow_plain": -1}}, ValueError, "counts.follow_plain"),
])
def test_bad_profiles_are_refused_naming_the_field(data, error, field):
    with pytest.raises(error, match=field):
        profile_from_dict(data)


def test_unknown_names_and_bad_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown reader profile"):
        load_profile("optimistic")
    with pytest.raises(ValueError, match="not a file"):
        load_profile(str(tmp_path / "absent.toml"))
    broken = tmp_path / "broken.toml"
    broken.write_text("name = [[[")
    with pytest.raises(ValueError, match="not valid"):
        load_profile(str(broken))
    with pytest.raises(TypeError, match="reader profile"):
        load_profile(3)  # type: ignore[arg-type]
