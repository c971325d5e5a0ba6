"""MemoryObservation with shipped memories and a user's own memory."""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401
from tepa_envs.agents import TEPA, TEPAFull
from tepa_envs.agents.memories.protocol import hooks_of
from tepa_envs.core import Evidence, LifecycleState, Record
from tepa_envs.wrappers import MEMORY_ENTRIES, MemoryObservation

# check_env warns that a wrapped env is not its unwrapped env; a wrapper is wrapped by design.
WRAPPED_ENV_WARNING = ".*is different from the unwrapped version"


class LastSuccessMemory:
    """A user's memory written from scratch: the last value that worked per key."""

    name = "last-success"

    def __init__(self) -> None:
        self.table: dict[str, tuple[str, int, int]] = {}

    def observe(self, evidence: Evidence) -> None:
        if evidence.outcome:
            _, support, _ = self.table.get(evidence.key, (evidence.value, 0, evidence.t))
            self.table[evidence.key] = (evidence.value, support + 1, evidence.t)

    def retrieve(self, key: str, context: str = "") -> list[Record]:
        if key not in self.table:
            return []
        value, support, t = self.table[key]
        return [Record(key, value, support, 2, LifecycleState.ACTIVE, t, t)]

    def reset(self) -> None:
        self.table.clear()


@pytest.fixture(autouse=True)
def warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=WRAPPED_ENV_WARNING)
        yield


def _regime_drift(**kwargs) -> gym.Env:
    return gym.make("TEPA/RegimeDrift-v0", **kwargs)


def test_user_memory_view_reaches_the_observation():
    memory = LastSuccessMemory()
    env = MemoryObservation(_regime_drift(), memory)
    assert env.memory is memory
    observation, info = env.reset(seed=0)
    assert env.observation_space.contains(observation)
    assert not observation["memory_value"].any() and observation["memory_validity"][0] == 0.0
    correct = env.unwrapped.to_action(info["oracle"]["correct"])
    observation, reward, *_ = env.step(correct)
    assert reward == 1.0
    expected = np.zeros(3, dtype=np.float32)
    expected[correct] = 1.0
    np.testing.assert_array_equal(observation["memory_value"], expected)
    assert observation["memory_validity"][0] == pytest.approx(2 / 5)
    assert observation["memory_support"][0] == pytest.approx(np.log1p(1) / np.log1p(1000))
    assert observation["memory_conflict"][0] == pytest.approx(np.log1p(2) / np.log1p(1000))
    np.testing.assert_array_equal(observation["obs"], [0, correct, 1])
    env.reset(seed=0)
    assert memory.table == {}


def test_user_memory_passes_gymnasium_and_sb3_checkers():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    for memory in (LastSuccessMemory(), "tepa", "tepa-full", "append-only", "oracle-reset"):
        env = MemoryObservation(_regime_drift().unwrapped, memory)
        check_env(env, skip_render_check=True)
        sb3_check_env(env, warn=True)
        assert set(MEMORY_ENTRIES) < set(env.observation_space.spaces)


def test_tepa_view_drops_a_value_that_stopped_working():
    env = MemoryObservation(_regime_drift(phase_lengths=(20, 5, 20, 5)), "tepa")
    _, info = env.reset(seed=1)
    for _ in range(25):  # stable and light drift, always with the correct tool
        observation, _, _, _, info = env.step(env.unwrapped.to_action(info["oracle"]["correct"]))
    assert info["oracle"]["phase_name"] == "full_reversal"
    assert observation["memory_validity"][0] > 0.6
    shown = int(np.argmax(observation["memory_value"]))
    for _ in range(3):  # full reversal: the remembered tool now fails
        observation, reward, _, _, info = env.step(shown)
        assert reward == 0.0
    assert observation["memory_value"][shown] == 0.0


def test_memory_by_name_and_import_path_and_trial_wiring():
    env = MemoryObservation(_regime_drift(), "tepa_envs.agents.memories.tepa:TEPA")
    assert isinstance(env.memory, TEPA)
    env = MemoryObservation(_regime_drift(), "tepa-full")
    env.reset(seed=0)
    assert isinstance(env.memory, TEPAFull)
    assert env.memory.trial == env.unwrapped.trial


def test_wrapper_pickles_and_records_its_arguments():
    env = MemoryObservation(_regime_drift(), "tepa", count_cap=50)
    env.reset(seed=3)
    env.step(0)
    copy = pickle.loads(pickle.dumps(env))
    for action in (1, 2, 0, 1):
        a, b = env.step(action), copy.step(action)
        for name in a[0]:
            np.testing.assert_array_equal(a[0][name], b[0][name])
    assert env.spec.additional_wrappers[-1].kwargs == {"memory": "tepa", "memory_kwargs": None, "count_cap": 50}
    remade = gym.make(EnvSpec.from_json(env.spec.to_json()))
    assert isinstance(remade, MemoryObservation) and remade.count_cap == 50


def test_works_under_async_vector_env_with_shared_memory():
    def wrap(env: gym.Env) -> gym.Env:
        return MemoryObservation(env, "tepa")

    kwargs = {"phase_lengths": (4, 4, 4, 4)}
    outputs = []
    for mode in ("sync", "async"):
        envs = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=2, vectorization_mode=mode, wrappers=[wrap], **kwargs)
        observations, _ = envs.reset(seed=0)
        trace = [observations]
        for step in range(20):
            trace.append(envs.step(np.array([step % 3, (step + 1) % 3]))[:4])
        envs.close()
        outputs.append(trace)
    for a, b in zip(*outputs):
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            if isinstance(x, dict):
                for name in x:
                    np.testing.assert_array_equal(x[name], y[name])
            else:
                np.testing.assert_array_equal(x, y)


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="not a memory"):
        MemoryObservation(_regime_drift(), object())
    with pytest.raises(ValueError, match="unknown memory method"):
        MemoryObservation(_regime_drift(), "no-such-memory")
    with pytest.raises(ValueError, match="count_cap"):
        MemoryObservation(_regime_drift(), "tepa", count_cap=0)
    with pytest.raises(TypeError, match="Discrete action space"):
        MemoryObservation(gym.make("Pendulum-v1"), "tepa")


# ------------------------------------------------------- reference computation
def _reference_observation(observation, info, memory, to_action, n_actions, count_cap, dict_inner):
    """MemoryObservation's documented observation, computed the straightforward way."""
    value = np.zeros(n_actions, dtype=np.float32)
    validity = support = conflict = 0.0
    if info.get("key", ""):
        for record in memory.retrieve(info["key"], info.get("context", "")):
            try:
                action = int(to_action(record.value))
            except ValueError:
                continue
            if 0 <= action < n_actions:
                value[action] = 1.0
                validity = record.validity
                support = np.log1p(min(max(record.support, 0), count_cap)) / np.log1p(count_cap)
                conflict = np.log1p(min(max(record.conflict, 0), count_cap)) / np.log1p(count_cap)
                break
    inner = dict(observation) if dict_inner else {"obs": observation}
    return {**inner, "memory_value": value, "memory_validity": np.array([validity], dtype=np.float32),
            "memory_support": np.array([support], dtype=np.float32),
            "memory_conflict": np.array([conflict], dtype=np.float32)}


def _reference_write(memory, info, env):
    for evidence in env.unwrapped.last_evidence:
        memory.observe(evidence)
    if info.get("oracle") and info["oracle"].get("phase_changed"):
        hooks_of(memory).on_phase_boundary()


class DictObservation(gym.ObservationWrapper):
    """RegimeDrift's observation as a flat Dict (MemoryObservation merges its entries)."""

    def __init__(self, env):
        super().__init__(env)
        self.observation_space = gym.spaces.Dict({
            "key": gym.spaces.Discrete(int(env.observation_space.nvec[0])),
            "previous": gym.spaces.MultiDiscrete(env.observation_space.nvec[1:]),
        })

    def observation(self, observation):
        return {"key": int(observation[0]), "previous": observation[1:].copy()}


class ReversedActions(gym.Wrapper):
    """Overrides ``to_action`` (reached through ``get_wrapper_attr``): actions in reverse order."""

    def to_action(self, value):
        return self.env.action_space.n - 1 - self.env.unwrapped.to_action(value)


def _assert_same_observation(observation, expected, where):
    assert list(observation) == list(expected), where
    for name, want in expected.items():
        got = observation[name]
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype and got.shape == want.shape, (where, name)
        np.testing.assert_array_equal(got, want, err_msg=f"{where}: {name}")


@pytest.mark.parametrize("memory", ["tepa", "lww", "append-only", "no-memory", "tepa-full"])
@pytest.mark.parametrize("variant", ["plain", "noisy-keys", "dict", "reversed", "small-cap"])
def test_observations_equal_a_reference_computation_over_whole_episodes(memory, variant):
    from tepa_envs.agents.memories.registry import make_memory

    kwargs = {"phase_lengths": (30, 30, 30, 30)}
    count_cap = 1000
    if variant == "noisy-keys":
        kwargs.update(n_keys=5, n_tools=4, key_noise=0.2)
    elif variant == "small-cap":
        count_cap = 3
    wrap = {"dict": DictObservation, "reversed": ReversedActions}.get(variant, lambda env: env)
    env = MemoryObservation(wrap(_regime_drift(**kwargs)), memory, count_cap=count_cap)
    reference_env = wrap(_regime_drift(**kwargs))
    reference_memory = make_memory(memory)
    to_action = reference_env.get_wrapper_attr("to_action")
    n_actions = int(reference_env.action_space.n)
    dict_inner = variant == "dict"
    policy = np.random.default_rng(7)
    for episode, seed in enumerate((11, 12)):
        observation, info = env.reset(seed=seed)
        ref_observation, ref_info = reference_env.reset(seed=seed)
        reference_memory.reset()
        hooks_of(reference_memory).bind_trial(
            reference_env.get_wrapper_attr("trial") if reference_env.get_wrapper_attr("offers_trials") else None)
        args = (reference_memory, to_action, n_actions, count_cap, dict_inner)
        _assert_same_observation(observation, _reference_observation(ref_observation, ref_info, *args),
                                 f"episode {episode} reset")
        assert env.observation_space.contains(observation)
        terminated = truncated = False
        t = 0
        while not (terminated or truncated):
            # mostly the correct tool, so that memories hold records with support and conflict
            correct = env.unwrapped.to_action(info["oracle"]["correct"])
            action = correct if policy.random() < 0.7 else int(policy.integers(n_actions))
            observation, reward, terminated, truncated, info = env.step(action)
            ref_observation, ref_reward, *_, ref_info = reference_env.step(action)
            _reference_write(reference_memory, ref_info, reference_env)
            assert reward == ref_reward
            _assert_same_observation(observation, _reference_observation(ref_observation, ref_info, *args),
                                     f"episode {episode} step {t}")
            t += 1
        assert t == 120


class CountsOfAnyType(LastSuccessMemory):
    """Counts as numpy ints, floats and out-of-range values; an unknown value ranked first."""

    def retrieve(self, key, context=""):
        records = super().retrieve(key, context)
        if not records:
            return records
        value, support, t = self.table[key]
        kinds = (np.int64(support), float(support) + 0.5, -3, 10**9, True)
        count = kinds[support % len(kinds)]
        return [Record(key, "no_such_tool", 1, 0, LifecycleState.ACTIVE, t, t),
                Record(key, value, count, count, LifecycleState.ACTIVE, t, t)]


def test_counts_of_any_type_match_the_reference():
    env = MemoryObservation(_regime_drift(), CountsOfAnyType(), count_cap=20)
    reference_env, reference_memory = _regime_drift(), CountsOfAnyType()
    observation, info = env.reset(seed=5)
    reference_env.reset(seed=5)
    args = (reference_memory, reference_env.unwrapped.to_action, 3, 20, False)
    for _ in range(60):
        action = env.unwrapped.to_action(info["oracle"]["correct"])
        observation, _, _, _, info = env.step(action)
        ref_observation, *_, ref_info = reference_env.step(action)
        _reference_write(reference_memory, ref_info, reference_env)
        _assert_same_observation(observation, _reference_observation(ref_observation, ref_info, *args), "step")
    assert observation["memory_value"].any()


def test_observations_are_fresh_arrays():
    env = MemoryObservation(_regime_drift(), "tepa")
    first, info = env.reset(seed=0)
    second, *_ = env.step(env.unwrapped.to_action(info["oracle"]["correct"]))
    third, *_ = env.step(0)
    for name in MEMORY_ENTRIES:
        for a, b in ((first, second), (second, third), (first, third)):
            assert not np.shares_memory(a[name], b[name])


class HiddenEvidence(gym.Wrapper):
    """Overrides ``last_evidence`` (read through ``get_wrapper_attr`` for a fixed-schema info): reveals nothing."""

    @property
    def last_evidence(self):
        return ()


@pytest.mark.parametrize("outer", [lambda env: env, lambda env: gym.wrappers.TimeLimit(env, 1000)])
def test_an_inner_wrapper_overriding_last_evidence_is_read_under_gymnasiums_wrappers(outer):
    # MemoryObservation skips gym.make's own wrappers when it looks up last_evidence, never a user's
    hidden = MemoryObservation(outer(HiddenEvidence(_regime_drift())), LastSuccessMemory())
    shown = MemoryObservation(outer(_regime_drift()), LastSuccessMemory())
    seen = []
    for env in (hidden, shown):
        _, info = env.reset(seed=0)
        for _ in range(5):
            observation, *_, info = env.step(env.unwrapped.to_action(info["oracle"]["correct"]))
        seen.append(bool(observation["memory_value"].any()))
    assert not hidden.memory.table and shown.memory.table
    assert seen == [False, True]
