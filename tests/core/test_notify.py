"""Change notification (issue 33, item 1): ``notify="none" | "detected" | "known"`` on every
task-stream environment, the detector's delay and false-alarm rates, the world identical
across levels, the native vector env equal to SyncVectorEnv, and the memory hook."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding

import tepa_envs
from tepa_envs.core.notify import (DEFAULT_DETECT_DELAY, DEFAULT_FALSE_ALARM_RATE, NOTIFY_LEVELS, ChangeNotifier,
                                   NotifySettings, check_notify, notify_flags)
from tepa_envs.agents import MemoryAgent, run_episode
from tepa_envs.agents.memories.baselines import AppendOnly, LastWriteWins
from tepa_envs.agents.memories.oracles import OracleReset
from tepa_envs.agents.memories.protocol import MemoryBase
from tepa_envs.agents.memories.tepa import TEPA
from tepa_envs.agents.readers.agent import write_step
from tepa_envs.core import Evidence, LifecycleState

STREAM_IDS = tepa_envs.TASK_STREAM_IDS
SMALL = {"phase_lengths": (12, 12, 12, 12)}


def _episode(env_id: str, seed: int, **kwargs: Any) -> list[tuple[np.ndarray, float, dict[str, Any]]]:
    """(observation, reward, info) of reset and every step, actions from a seeded policy."""
    env = gym.make(env_id, **{**SMALL, **kwargs})
    env.action_space.seed(seed)
    observation, info = env.reset(seed=seed)
    out = [(observation, 0.0, info)]
    terminated = False
    while not terminated:
        observation, reward, terminated, _, info = env.step(env.action_space.sample())
        out.append((observation, reward, info))
    env.close()
    return out


def _true_changes(steps: list[tuple[np.ndarray, float, dict[str, Any]]]) -> list[bool]:
    """For every presentation (info with a task): does its key's correct value differ from the
    key's correct value at its previous presentation?"""
    last: dict[str, str] = {}
    out = []
    for _, _, info in steps:
        key, correct = info["key"], info["oracle"]["correct"]
        if not key:
            out.append(False)
            continue
        out.append(key in last and last[key] != correct)
        last[key] = correct
    return out


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_known_flags_exactly_the_first_task_after_a_true_change(env_id):
    for seed in (0, 1):
        steps = _episode(env_id, seed, notify="known")
        expected = _true_changes(steps)
        flags = [info["notified"] for _, _, info in steps]
        assert all(type(flag) is bool for flag in flags)
        assert flags == expected, f"seed {seed}"
        assert [int(observation[-1]) for observation, _, _ in steps] == [int(f) for f in flags]
        assert steps[0][2]["notified"] is False and steps[-1][2]["notified"] is False  # reset, terminal
    assert any(_true_changes(_episode(env_id, s, notify="known")) for s in range(3))


@pytest.mark.parametrize("env_id", STREAM_IDS)
@pytest.mark.parametrize("level", ["known", "detected"])
def test_the_world_is_identical_across_levels(env_id, level):
    """Same seed and actions: the same tasks, truths and rewards; the observation is the
    level-free one plus the flag."""
    base, notified = _episode(env_id, 3), _episode(env_id, 3, notify=level)
    assert len(base) == len(notified)
    for (o, r, i), (on, rn, i_n) in zip(base, notified):
        np.testing.assert_array_equal(o, on[:-1])
        assert r == rn
        assert {k: v for k, v in i_n.items() if k != "notified"} == i


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_none_is_todays_behaviour(env_id):
    default, explicit = _episode(env_id, 5), _episode(env_id, 5, notify="none", detect_delay=7.0,
                                                      false_alarm_rate=0.5)
    env = gym.make(env_id)
    plain_space = env.observation_space
    env.close()
    notified = gym.make(env_id, notify="detected")
    assert list(notified.observation_space.nvec) == list(plain_space.nvec) + [2]
    notified.close()
    for (o, r, i), (oe, re, ie) in zip(default, explicit):
        np.testing.assert_array_equal(o, oe)
        assert r == re and i == ie and "notified" not in i
        assert o.shape == plain_space.shape


@pytest.mark.parametrize("env_id", STREAM_IDS)
def test_rich_schema_carries_the_flag_too(env_id):
    fixed = _episode(env_id, 2, notify="known")
    rich = _episode(env_id, 2, notify="known", info_schema="rich")
    assert [i["notified"] for _, _, i in fixed] == [i["notified"] for _, _, i in rich]


def test_detected_with_no_delay_and_no_false_alarm_is_known():
    for env_id in ("TEPA/RegimeDrift-Poisson-v0", "TEPA/PreferenceStream-v0"):
        known = _episode(env_id, 4, notify="known")
        detected = _episode(env_id, 4, notify="detected", detect_delay=0.0, false_alarm_rate=0.0)
        assert [i["notified"] for _, _, i in known] == [i["notified"] for _, _, i in detected]


def _detector_trace(settings: NotifySettings, seed: int, n_keys: int, total: int, hazard: float
                    ) -> tuple[list[int], int, int]:
    """Run the detector over a synthetic stream of ``n_keys`` keys, each presentation changing
    its key's value with probability ``hazard``. Returns the realised delays (presentations
    of the key from a change to its alarm), the false alarms, and the presentations they
    were counted over (a key's presentations after its first with no alarm pending)."""
    world = np.random.default_rng(seed)
    notifier = ChangeNotifier(settings, np.random.default_rng(seed + 1000))
    value = [0] * n_keys
    seen = [0] * n_keys
    changed_at: dict[int, int] = {}  # key -> presentation of the change whose alarm is awaited
    delays: list[int] = []
    false_alarms = quiet = 0
    for _ in range(total):
        key = int(world.integers(n_keys))
        if seen[key] and world.random() < hazard:
            value[key] += 1
            changed_at.setdefault(key, seen[key])
        n = seen[key]
        seen[key] += 1
        flag = notifier.present(key, value[key])
        if key in changed_at:
            if flag:  # the awaited alarm (a false alarm on the same presentation is indistinguishable)
                delays.append(n - changed_at.pop(key))
        elif n > 0:
            quiet += 1
            false_alarms += flag
    return delays, false_alarms, quiet


@pytest.mark.parametrize("mean", [0.0, 1.0, 3.0])
def test_detected_delays_are_geometric_with_the_documented_mean(mean):
    settings = check_notify("detected", mean, 0.0)
    delays: list[int] = []
    for seed in range(4):
        trace, false_alarms, _ = _detector_trace(settings, seed, n_keys=4, total=20000, hazard=0.01)
        delays += trace
        assert false_alarms == 0
    delays_arr = np.array(delays)
    assert len(delays_arr) > 500
    # The delay is truncated only by the episode's end (a pending alarm is kept through later
    # changes), so its mean and P(D = 0) = 1 / (1 + mean) are those of the geometric.
    assert abs(delays_arr.mean() - mean) <= 0.1 + 0.08 * mean
    assert abs((delays_arr == 0).mean() - 1 / (1 + mean)) < 0.05


@pytest.mark.parametrize("rate", [0.0, 0.02, 0.1])
def test_detected_false_alarm_rate_per_presentation(rate):
    settings = check_notify("detected", DEFAULT_DETECT_DELAY, rate)
    false_alarms = quiet = 0
    for seed in range(4):
        _, f, q = _detector_trace(settings, seed, n_keys=4, total=20000, hazard=0.001)
        false_alarms, quiet = false_alarms + f, quiet + q
    assert quiet > 50000
    observed = false_alarms / quiet
    assert abs(observed - rate) <= 4 * np.sqrt(rate * (1 - rate) / quiet) + 1e-12


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-Poisson-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0"])
def test_detected_on_an_env_matches_the_detector_over_its_stream(env_id):
    """The env's flags are notify_flags over its own presented (key, correct) stream, from the
    generator spawned from the seeded np_random; and the same seed gives the same flags."""
    kwargs = {"notify": "detected", "detect_delay": 2.0, "false_alarm_rate": 0.1}
    steps = _episode(env_id, 8, **kwargs)
    again = _episode(env_id, 8, **kwargs)
    flags = [i["notified"] for _, _, i in steps]
    assert flags == [i["notified"] for _, _, i in again]
    presented = [(i["key"], i["oracle"]["correct"]) for _, _, i in steps if i["key"]]
    rng, _ = seeding.np_random(8)
    expected = notify_flags(check_notify(**kwargs), rng.spawn(1)[0], [k for k, _ in presented],
                            [c for _, c in presented])
    assert flags[:len(presented)] == expected.tolist()
    assert any(flags) and not flags[0]


@pytest.mark.parametrize("kwargs, error, field", [
    ({"notify": "sometimes"}, ValueError, "notify"),
    ({"notify": 1}, TypeError, "notify"),
    ({"notify": None}, TypeError, "notify"),
    ({"notify": "detected", "detect_delay": -1.0}, ValueError, "detect_delay"),
    ({"notify": "detected", "detect_delay": float("nan")}, ValueError, "detect_delay"),
    ({"notify": "detected", "detect_delay": 1e9}, ValueError, "detect_delay"),
    ({"notify": "detected", "detect_delay": "2"}, TypeError, "detect_delay"),
    ({"notify": "detected", "detect_delay": True}, TypeError, "detect_delay"),
    ({"notify": "detected", "false_alarm_rate": 1.5}, ValueError, "false_alarm_rate"),
    ({"notify": "known", "false_alarm_rate": "0.1"}, TypeError, "false_alarm_rate"),
    ({"observe_truth": 1}, TypeError, "observe_truth"),
])
@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0"])
def test_bad_arguments_name_the_field_before_any_state_changes(env_id, kwargs, error, field, tmp_path):
    extra = {"sandbox_dir": str(tmp_path)} if "FileOps" in env_id else {}
    with pytest.raises(error, match=field):
        gym.make(env_id, **kwargs, **extra)
    assert list(tmp_path.iterdir()) == []  # FileOps made no sandbox
    if env_id == "TEPA/RegimeDrift-v0":
        with pytest.raises(error, match=field):
            gym.make_vec(env_id, num_envs=2, **kwargs)


@pytest.mark.parametrize("schema", ["fixed", "rich"])
@pytest.mark.parametrize("kwargs", [
    {"notify": "known"},
    {"notify": "detected", "detect_delay": 2.0, "false_alarm_rate": 0.1},
    {"notify": "detected", "schedule": "gradual", "n_keys": 3, "observe_truth": True},
    {"notify": "known", "schedule": "poisson", "n_keys": 4, "key_noise": 0.2},
])
def test_native_vector_env_equals_sync(kwargs, schema):
    native = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=3, phase_lengths=(5, 5, 5, 5), info_schema=schema,
                          **kwargs)
    sync = gym.make_vec("TEPA/RegimeDrift-v0", num_envs=3, phase_lengths=(5, 5, 5, 5), info_schema=schema,
                        vectorization_mode="sync", **kwargs)
    assert native.observation_space == sync.observation_space
    obs_n, info_n = native.reset(seed=5)
    obs_s, info_s = sync.reset(seed=5)
    np.testing.assert_array_equal(obs_n, obs_s)
    np.testing.assert_array_equal(info_n["notified"], info_s["notified"])
    policy = np.random.default_rng(0)
    raised = 0
    for step in range(70):  # several autoresets
        actions = policy.integers(0, 3, size=3)
        out_n, out_s = native.step(actions), sync.step(actions)
        for a, b in zip(out_n[:4], out_s[:4]):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step}")
            assert a.dtype == b.dtype
        for name in ("notified", "_notified"):
            np.testing.assert_array_equal(out_n[4][name], out_s[4][name], err_msg=f"step {step} {name}")
            assert out_n[4][name].dtype == out_s[4][name].dtype
        raised += int(out_n[4]["notified"].sum())
    assert raised > 0
    native.close()
    sync.close()


# --------------------------------------------------------------------------- the memory hook
class _Recorder(MemoryBase):
    name = "recorder"

    def __init__(self) -> None:
        super().__init__()
        self.notified: list[str] = []

    def on_notify(self, key: str) -> None:
        self.notified.append(key)

    def _observe(self, evidence: Evidence) -> None:
        pass

    def _retrieve(self, key: str, context: str) -> list:
        return []

    def _reset(self) -> None:
        pass


def test_write_step_calls_on_notify_with_the_presented_key():
    memory = _Recorder()
    write_step(memory, {"key": "k", "evidence": [], "notified": True})
    write_step(memory, {"key": "j", "evidence": [], "notified": False})
    write_step(memory, {"key": "j", "evidence": []})
    assert memory.notified == ["k"]


def test_the_episode_loop_tells_every_flag():
    env = gym.make("TEPA/RegimeDrift-ManyKeys-v0", notify="known")
    steps = _episode("TEPA/RegimeDrift-ManyKeys-v0", 6, notify="known", phase_lengths=(80, 80, 80, 80))
    memory = _Recorder()
    run_episode(env, MemoryAgent(memory), seed=6)
    flagged = [i["key"] for _, _, i in steps if i["notified"]]
    assert memory.notified == flagged and flagged
    env.close()


@pytest.mark.parametrize("env_id", ["TEPA/RegimeDrift-v0", "TEPA/RegimeDrift-Async-v0", "TEPA/PreferenceStream-v0",
                                    "TEPA/FileOps-v0"])
def test_append_only_cleared_on_known_is_the_per_key_oracle_reset(env_id):
    """``oracle-reset`` is the ``known`` end of the dial: append-only with ``on_notify="clear"``
    told by ``notify="known"`` makes the per-key oracle reset's decisions."""
    kwargs = {"phase_lengths": (10, 10, 10, 10)} if "FileOps" in env_id else {}
    for seed in range(3):
        env = gym.make(env_id, notify="known", **kwargs)
        cleared = run_episode(env, MemoryAgent(AppendOnly(on_notify="clear")), seed=seed)
        oracle = run_episode(env, MemoryAgent(OracleReset()), seed=seed)
        env.close()
        np.testing.assert_array_equal(cleared.success, oracle.success)


def test_the_options_default_off_and_act_when_chosen():
    assert LastWriteWins().on_notify_action == "ignore" and AppendOnly().on_notify_action == "ignore"
    assert TEPA().on_notify_action == "ignore"
    evidence = Evidence("k", "a", 0, True, "executor")
    for memory, after in ((LastWriteWins(on_notify="clear"), 0), (LastWriteWins(), 1),
                          (AppendOnly(on_notify="clear"), 0), (TEPA(on_notify="revoke"), 0), (TEPA(), 1)):
        memory.observe(evidence)
        assert len(memory.retrieve("k")) == 1
        memory.on_notify("k")
        memory.on_notify("unseen")
        assert len(memory.retrieve("k")) == after, memory
    demoted = TEPA(on_notify="demote")
    demoted.observe(evidence)
    demoted.on_notify("k")
    assert demoted.retrieve("k") == [] and demoted.precedents("k")[0].state is LifecycleState.HYPOTHESIS
    assert demoted.audit_log[-1].reason == "demoted on change notification"
    demoted.observe(Evidence("k", "a", 1, True, "executor"))  # a success of its value promotes it again
    assert [r.value for r in demoted.retrieve("k")] == ["a"]
    revoked = TEPA(on_notify="revoke")
    revoked.observe(evidence)
    revoked.on_notify("k")
    assert revoked.audit_log[-1].reason == "revoked on change notification" and len(revoked.archive) == 1
    for bad, error in (("wipe", ValueError), (1, TypeError)):
        for factory in (LastWriteWins, AppendOnly, TEPA):
            with pytest.raises(error, match="on_notify"):
                factory(on_notify=bad)


def test_defaults_are_documented_values():
    assert NOTIFY_LEVELS == ("none", "detected", "known")
    assert check_notify("none") == NotifySettings("none", DEFAULT_DETECT_DELAY, DEFAULT_FALSE_ALARM_RATE)
    for env_id in STREAM_IDS:
        env = gym.make(env_id)
        assert env.unwrapped.notify == "none" and env.unwrapped.observe_truth is False
        env.close()
