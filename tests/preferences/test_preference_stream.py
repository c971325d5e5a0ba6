"""TEPA/PreferenceStream-v0: the user model, noise, trials and TEPA-Full's behaviour on it."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

import tepa_envs  # noqa: F401
from tepa_envs.agents import EvidenceReader, LifecycleState, MemoryAgent, SemanticRetrieval, run_episode
from tepa_envs.core import TRIAL_KINDS, Evidence
from tepa_envs.preferences.env import PreferenceStreamEnv
from tepa_envs.preferences.users import SLOT_VALUES, parse_statement, session_text

ACTIVE, REVOKED = LifecycleState.ACTIVE, LifecycleState.REVOKED


def _rollout(env: PreferenceStreamEnv, seed: int, actions: list[int], trial_every: int = 0):
    """Observations, rewards and infos of an episode played with fixed ``actions``;
    with ``trial_every > 0`` every trial kind is spent on every key that often."""
    observation, info = env.reset(seed=seed)
    trace = [(observation.tolist(), None, info)]
    for i, action in enumerate(actions):
        if trial_every and i % trial_every == 0:
            for key in env.keys:
                for kind in TRIAL_KINDS:
                    env.trial(kind, key, env.choices(key)[i % env.n_values])
        observation, reward, terminated, truncated, info = env.step(action)
        trace.append((observation.tolist(), reward, info))
        if terminated or truncated:
            break
    return trace


def test_passes_gymnasium_check_env():
    check_env(gym.make("TEPA/PreferenceStream-v0").unwrapped, skip_render_check=False)


def test_default_world_shape_and_keys():
    env = PreferenceStreamEnv(info_schema="rich")
    _, info = env.reset(seed=0)
    assert len(env.keys) == 12 and all(key.count("@") == 1 for key in env.keys)
    assert {key.split("@")[1] for key in env.keys} == {"work", "home", "travel"}
    assert env.action_space.n == 4 * 5
    assert info["key"] in env.keys and info["evidence"] == []
    for key in env.keys:
        slot = key.split("@")[0]
        assert env.choices(key) == SLOT_VALUES[slot][:5]
        assert set(env.choices(key)) <= set(env.values)


def test_same_seed_same_stream_different_seed_different_user():
    env = PreferenceStreamEnv()
    actions = [int(a) for a in np.random.default_rng(1).integers(0, env.action_space.n, size=160)]
    first, second = _rollout(env, 7, actions), _rollout(PreferenceStreamEnv(), 7, actions)
    assert first == second
    other = _rollout(env, 8, actions)
    assert [info["context"] for *_, info in other] != [info["context"] for *_, info in first]


_DIGEST_SCRIPT = """
import hashlib
from tepa_envs.preferences.env import PreferenceStreamEnv
env = PreferenceStreamEnv(noise_rate=0.2)
observation, info = env.reset(seed=13)
parts = [repr(observation.tolist()), repr(info)]
for t in range(160):
    observation, reward, terminated, _, info = env.step((t * 7) % env.action_space.n)
    parts += [repr(observation.tolist()), repr(reward), repr(info)]
print(hashlib.sha256("".join(parts).encode()).hexdigest())
"""


def test_same_seed_same_stream_in_another_process():
    digests = set()
    for hash_seed in ("1", "2"):
        result = subprocess.run([sys.executable, "-c", _DIGEST_SCRIPT], capture_output=True, text=True,
                                env={**os.environ, "PYTHONHASHSEED": hash_seed}, check=True)
        digests.add(result.stdout.strip())
    in_this_process = io.StringIO()
    with contextlib.redirect_stdout(in_this_process):
        exec(_DIGEST_SCRIPT, {})
    assert digests == {in_this_process.getvalue().strip()}


def test_reward_is_the_true_outcome_and_evidence_reports_it_except_on_noise():
    env = PreferenceStreamEnv(noise_rate=0.2, info_schema="rich")
    _, info = env.reset(seed=3)
    noisy = set(env.noisy_sessions().tolist())
    assert noisy, "a 20% noise rate must produce noisy sessions"
    rng = np.random.default_rng(0)
    terminated, t = False, 0
    while not terminated:
        key, correct = info["key"], info["oracle"]["correct"]
        value = correct if rng.random() < 0.5 else env.choices(key)[int(rng.integers(env.n_values))]
        _, reward, terminated, _, info = env.step(env.to_action(value))
        (evidence,) = info["evidence"]
        assert (evidence.key, evidence.value, evidence.t, evidence.source) == (key, value, t, "user-feedback")
        assert info["success"] == (value == correct) and reward == float(value == correct)
        assert evidence.outcome == (info["success"] != (t in noisy))
        t += 1


def test_transient_noise_is_one_off_per_key():
    env = PreferenceStreamEnv(noise_rate=0.5, noise_gap=6)
    for seed in range(5):
        env.reset(seed=seed)
        positions: dict[int, list[int]] = {}
        for t, key in enumerate(env.world.session_key.tolist()):
            positions.setdefault(key, []).append(t)
        noisy = set(env.noisy_sessions().tolist())
        for sessions in positions.values():
            flags = [i for i, t in enumerate(sessions) if t in noisy]
            assert all(b - a >= 6 for a, b in zip(flags, flags[1:]))


def test_default_noise_and_statement_rates():
    env = PreferenceStreamEnv()
    noisy, stated = [], []
    for seed in range(30):
        env.reset(seed=seed)
        noisy.append(env.world.noisy.mean())
        stated.append(env.world.stated.mean())
    assert 0.03 < np.mean(noisy) < 0.05
    assert 0.82 < np.mean(stated) < 0.88


def test_stated_value_is_parsed_from_the_text_and_is_the_current_preference():
    env = PreferenceStreamEnv()
    _, info = env.reset(seed=11)
    stated_count, terminated = 0, False
    while not terminated:
        key, context = info["key"], info["context"]
        stated = env.stated_value(key, context)
        assert stated == (info["oracle"]["correct"] if env.world.stated[env.t] else None)
        stated_count += stated is not None
        other_slot_key = next(k for k in env.keys if k.split("@")[0] != key.split("@")[0])
        assert env.stated_value(other_slot_key, context) is None
        _, _, terminated, _, info = env.step(env.to_action(env.choices(key)[0]))
    assert 0.7 * 160 < stated_count < 160


def test_statement_parsing_and_similar_profile_wording():
    work = session_text(4, "tone@work", 1, "casual")
    home = session_text(4, "tone@home", 1, None)
    assert parse_statement("tone@work", work) == "casual"
    assert parse_statement("cuisine@work", work) is None
    assert parse_statement("tone@home", home) is None
    assert work.replace("work", "home").startswith(home)


def test_trials_answer_the_current_preference_and_are_counted():
    env = PreferenceStreamEnv()
    env.reset(seed=2)
    for _ in range(100):
        env.step(0)
    for key in env.keys:
        for value in env.choices(key):
            assert env.trial("support", key, value) == (value == env.preference(key))
    assert env.trial("contamination", "tone@mars", "casual") is False
    assert env.trials_spent["support"] == sum(len(env.choices(k)) for k in env.keys)
    with pytest.raises(ValueError, match="trial kind"):
        env.trial("peek", env.keys[0], "thai")


def test_trials_never_advance_the_stream_or_change_outcomes():
    env = PreferenceStreamEnv(noise_rate=0.1)
    actions = [int(a) for a in np.random.default_rng(5).integers(0, env.action_space.n, size=160)]
    assert _rollout(env, 21, actions) == _rollout(env, 21, actions, trial_every=3)
    # TEPA-Full spends trials while it plays; replaying its actions without trials gives the same episode.
    agent = MemoryAgent("tepa-full")
    observation, info = env.reset(seed=21)
    agent.reset(env, 21)
    trace, actions, terminated = [(observation.tolist(), None, info)], [], False
    while not terminated:
        actions.append(agent.act(info))
        observation, reward, terminated, _, info = env.step(actions[-1])
        trace.append((observation.tolist(), reward, info))
        agent.learn(info)
    assert sum(env.trials_spent.values()) > 0
    assert trace == _rollout(env, 21, actions)


def test_transient_noise_alone_never_replaces_an_active_preference():
    # A long stable phase (no real change) with heavy transient noise.
    env = PreferenceStreamEnv(phase_lengths=(200, 1, 1, 1), noise_rate=0.3)
    for seed in range(30):
        _, info = env.reset(seed=seed)
        agent = MemoryAgent("tepa-full")
        agent.reset(env, seed)
        while env.t < 200:
            _, _, _, _, info = env.step(agent.act(info))
            agent.learn(info)
        assert env.noisy_sessions()[env.noisy_sessions() < 200].size > 10
        for event in agent.memory.audit_log:
            assert not (event.from_state is ACTIVE and event.to_state is REVOKED), event
            if event.to_state is ACTIVE:
                assert event.value == env.preference(event.key, event.t), event


def test_a_real_change_replaces_the_active_preference_on_the_third_session_of_its_key():
    """Documented bound: with every session stated and a reader that always trusts
    memory, two failed uses revoke the stale preference and the third session's
    success is promoted after trials (an unrelated key's preference still holds)."""
    env = PreferenceStreamEnv(phase_lengths=(60, 60, 1, 1), n_contexts=1, stated_rate=1.0,
                              noise_rate=0.0, light_drift_fraction=0.25)
    for seed in range(6):
        _, info = env.reset(seed=seed)
        agent = MemoryAgent("tepa-full", EvidenceReader(follow_prob=1.0, stated_prob=0.0))
        agent.reset(env, seed)
        (changed,) = [k for k in env.keys if env.preference(k, 0) != env.preference(k, 60)]
        sessions_after_change = 0
        while env.t < 120:
            key, t = info["key"], env.t
            _, _, _, _, info = env.step(agent.act(info))
            agent.learn(info)
            if t >= 60 and key == changed:
                sessions_after_change += 1
                shown = agent.memory.retrieve(changed)
                if sessions_after_change < 3:
                    assert not shown or shown[0].value == env.preference(changed, 0)
                else:
                    assert shown and shown[0].value == env.preference(changed, 60)
        assert sessions_after_change >= 3


def test_every_method_runs_and_reports_its_trial_budget():
    env = gym.make("TEPA/PreferenceStream-v0", phase_lengths=(10, 10, 10, 10))
    full = run_episode(env, MemoryAgent("tepa-full"), seed=4)
    plain = run_episode(env, MemoryAgent("tepa"), seed=4)
    assert full.success.shape == (40,) and sum(full.trials.values()) > 0
    assert sum(plain.trials.values()) == 0


@pytest.mark.parametrize("kwargs, error", [
    ({"n_slots": 3}, ValueError), ({"n_contexts": 4}, ValueError), ({"n_values": 2}, ValueError),
    ({"stated_rate": 1.5}, ValueError), ({"noise_rate": "0.1"}, TypeError), ({"noise_gap": 0}, ValueError),
    ({"phase_lengths": (40, 40, 40)}, ValueError), ({"render_mode": 1}, TypeError),
])
def test_bad_arguments_are_refused(kwargs, error):
    with pytest.raises(error):
        PreferenceStreamEnv(**kwargs)


@pytest.mark.parametrize("phase_lengths, error, match", [
    ({0: 40, 1: 40, 2: 40, 3: 40}, TypeError, "phase_lengths must be a tuple or list"),
    ((10**12, 40, 40, 40), ValueError, r"phase_lengths\[0\] must be in \[1, 1000000\]"),
    ((40, 40, 40, 10**6 + 1), ValueError, r"phase_lengths\[3\] must be in \[1, 1000000\]"),
])
def test_phase_lengths_are_checked_before_any_allocation(phase_lengths, error, match):
    with pytest.raises(error, match=match):
        PreferenceStreamEnv(phase_lengths=phase_lengths)
    with pytest.raises(error, match=match):
        gym.make("TEPA/PreferenceStream-v0", phase_lengths=phase_lengths)


def test_bad_calls_are_refused():
    env = PreferenceStreamEnv()
    with pytest.raises(ResetNeeded):
        env.trial("support", "tone@work", "casual")
    with pytest.raises(ResetNeeded, match="reset"):
        env.preference("tone@work")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="key must be one of"):
        env.choices("mood@work")
    with pytest.raises(TypeError):
        env.stated_value("tone@work", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        env.step(env.action_space.n)


def test_similarity_retriever_surfaces_another_profiles_preference():
    memory = SemanticRetrieval()
    memory.retrieve("tone@work", session_text(3, "tone@work", 0, None))
    memory.observe(Evidence("tone@work", "formal", 3, True, "user-feedback"))
    memory.retrieve("cuisine@work", session_text(4, "cuisine@work", 0, None))
    memory.observe(Evidence("cuisine@work", "thai", 4, True, "user-feedback"))
    shown = memory.retrieve("tone@home", session_text(9, "tone@home", 0, None))
    assert shown[0].key == "tone@work" and shown[0].value == "formal"


@pytest.mark.parametrize("kwargs", [
    {},
    {"n_slots": 6, "n_contexts": 1, "n_values": 6, "stated_rate": 0.4, "schedule": "gradual"},
    {"n_slots": 5, "n_contexts": 2, "n_values": 3, "noise_rate": 0.3, "noise_gap": 1, "schedule": "poisson"},
])
def test_observation_and_text_agree_with_the_user_model_at_every_step(kwargs):
    """The step path builds texts and observations from per-key pieces; they must read
    as session_text writes and stated_value parses, and the truth as preference() says."""
    from tepa_envs.preferences.users import PROFILE_CONTEXTS, SLOTS

    env = PreferenceStreamEnv(**kwargs)
    rng = np.random.default_rng(3)
    for seed in (0, 1):
        observation, info = env.reset(seed=seed)
        noisy, terminated, t = set(env.noisy_sessions().tolist()), False, 0
        while not terminated:
            key, context, correct = info["key"], info["context"], info["oracle"]["correct"]
            slot, _, profile = key.partition("@")
            stated = env.stated_value(key, context)
            assert stated == (correct if env.world.stated[t] else None)
            assert context == session_text(t, key, int(env.world.request[t]), stated)
            assert correct == env.preference(key, t)
            stated_index = env.n_values if stated is None else env.choices(key).index(stated)
            assert observation.tolist()[:3] == [SLOTS.index(slot), PROFILE_CONTEXTS.index(profile), stated_index]
            action = int(rng.integers(env.action_space.n))
            observation, reward, terminated, _, info = env.step(action)
            reported = (env.values[action] == correct) != (t in noisy)
            assert reward == float(env.values[action] == correct)
            assert observation.tolist()[3:5] == [action, int(reported)]
            assert env.last_evidence[0].outcome is reported
            t += 1
