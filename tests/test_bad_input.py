"""Bad constructor input, over every registered environment: refused at once, in the
constructor, with ``TypeError`` for a wrong type and ``ValueError`` naming the field
for a wrong value; never a hang, a ``MemoryError`` or a failure deferred to ``reset``.

Arguments are found by introspection (their defaults give their kind), so an
argument added later is covered without editing this file.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import signal
import warnings

import gymnasium as gym
import pytest
from gymnasium.envs.registration import load_env_creator

import tepa_envs

HUGE = 10**30
MAX_PHASE_LENGTH = 10**6  # the documented bound (tepa_envs.core.checks.MAX_PHASE_LENGTH)


@contextlib.contextmanager
def deadline(seconds: float):
    """Fail (``TimeoutError``) instead of hanging when the block runs longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"took more than {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def creator(env_id: str):
    return load_env_creator(gym.spec(env_id).entry_point)


def arguments(kind: type) -> list[tuple[str, str]]:
    """``(env_id, name)`` of every constructor argument whose default is of ``kind`` (bool excluded)."""
    found = []
    for env_id in tepa_envs.ENV_IDS:
        for name, parameter in inspect.signature(creator(env_id)).parameters.items():
            default = parameter.default
            if type(default) is kind:
                found.append((env_id, name))
    return found


INT_ARGUMENTS = arguments(int)
FLOAT_ARGUMENTS = arguments(float)
PHASE_ENVS = [env_id for env_id in tepa_envs.ENV_IDS
              if "phase_lengths" in inspect.signature(creator(env_id)).parameters]


def build(env_id: str, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the refusal is under test, not warnings before it
        return creator(env_id)(**kwargs)


def test_the_introspection_finds_the_arguments():
    assert {"n_tools", "n_keys", "max_records", "max_files", "chunk_facts"} <= {n for _, n in INT_ARGUMENTS}
    assert len(PHASE_ENVS) >= 3


@pytest.mark.parametrize("env_id, name", INT_ARGUMENTS)
def test_a_huge_int_is_refused_at_once_or_harmless(env_id, name):
    """``10**30`` for any int argument: a ``ValueError`` naming it, within a second, or
    (for a quota or a gap, which is only compared against) an env that works."""
    try:
        with deadline(1.0):
            env = build(env_id, **{name: HUGE})
    except ValueError as error:
        assert name in str(error)
        return
    with deadline(5.0):
        env.reset(seed=0)
        env.step(env.action_space.sample())
    env.close()


@pytest.mark.parametrize("env_id, name", INT_ARGUMENTS)
@pytest.mark.parametrize("value", ["3", 3.0, None])
def test_an_int_argument_of_another_type_is_a_type_error(env_id, name, value):
    with pytest.raises(TypeError, match=name):
        build(env_id, **{name: value})


@pytest.mark.parametrize("env_id, name", INT_ARGUMENTS)
def test_a_negative_int_is_a_value_error(env_id, name):
    with pytest.raises(ValueError, match=name):
        build(env_id, **{name: -1})


@pytest.mark.parametrize("env_id, name", FLOAT_ARGUMENTS)
@pytest.mark.parametrize("value", [-0.5, 1e30, math.nan])
def test_a_rate_out_of_range_is_a_value_error(env_id, name, value):
    with pytest.raises(ValueError, match=name):
        build(env_id, **{name: value})


@pytest.mark.parametrize("env_id", PHASE_ENVS)
@pytest.mark.parametrize("phase_lengths", [
    {0: 40, 1: 40, 2: 40, 3: 40}, "abcd", 40, None, {40, 41, 42, 43}, (40.0, 40, 40, 40),
])
def test_phase_lengths_of_the_wrong_type_are_a_type_error(env_id, phase_lengths):
    with pytest.raises(TypeError, match="phase_lengths"):
        build(env_id, phase_lengths=phase_lengths)


@pytest.mark.parametrize("env_id", PHASE_ENVS)
@pytest.mark.parametrize("phase_lengths", [
    (HUGE, 1, 1, 1), (1, 1, 1, MAX_PHASE_LENGTH + 1), (40, 40, 40), [40] * 10**6, (40, 0, 40, 40),
])
def test_phase_lengths_out_of_bounds_are_refused_before_any_allocation(env_id, phase_lengths):
    with deadline(1.0), pytest.raises(ValueError, match="phase_lengths"):
        build(env_id, phase_lengths=phase_lengths)


@pytest.mark.parametrize("env_id", [e for e in tepa_envs.ENV_IDS if gym.spec(e).vector_entry_point])
@pytest.mark.parametrize("num_envs", [HUGE, 10**7])
def test_a_huge_num_envs_is_refused_at_once(env_id, num_envs):
    with deadline(1.0), pytest.raises(ValueError, match="num_envs"):
        gym.make_vec(env_id, num_envs=num_envs)


BOUNDS = {"phase_lengths": "MAX_PHASE_LENGTH", "n_tools": "MAX_TOOLS", "n_keys": "MAX_KEYS",
          "max_records": "MAX_RECORDS", "max_files": "2 + 4 * n_domains", "n_domains": "at most 6"}


@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_every_bound_is_documented_in_the_arguments_section(env_id):
    """The ``## Arguments`` entry of each size argument states its bound."""
    documented = (creator(env_id).__doc__ or "").split("## Arguments", 1)[1]
    for name, bound in BOUNDS.items():
        if name in inspect.signature(creator(env_id)).parameters:
            entry = documented.split(f"``{name}``", 1)[1].split("\n    * ", 1)[0]
            assert bound in entry, f"{env_id}: the entry of {name} does not state its bound ({bound})"
