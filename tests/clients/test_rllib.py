"""Ray RLlib as a client (issue 32, items 4 and 6): ``tepa_envs.wrappers.rllib.register_envs()``
then RLlib's default PPO trains one iteration on every registered id, with and without a memory,
in the multi-agent world (``ParallelPettingZooEnv`` + ``SharedMemory``), with RLlib's LSTM, in
vectorised runners (sync, async, the native vector env with the batched memory) and in a remote
runner; FactConsolidation trains with ``action_mode="choice"`` and is refused, naming the option,
without it; a fixed seed gives the same samples.

Skipped, with the reason, without ``ray[rllib]`` (the ``clients`` extra)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from typing import Any, Iterator

import gymnasium as gym
import numpy as np
import pytest

import tepa_envs

try:
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.rllib.env.env_context import EnvContext
except ImportError as exc:  # dm_tree, pandas, ... come with ray[rllib], not with ray
    pytest.skip(f"Ray RLlib is not importable ({exc}): pip install 'tepa-envs[clients]'", allow_module_level=True)

from tepa_envs.wrappers.rllib import (MULTI_AGENT_ENV_ID, REQUIRED_CONFIG, RLlibEnvCreator, make_rllib_env,
                                      register_envs)

FACTS = "TEPA/FactConsolidation-v0"
FAMILIES = ("TEPA/RegimeDrift-v0", "TEPA/FileOps-v0", "TEPA/PreferenceStream-v0")
SCENARIOS = tuple(tepa_envs.SCENARIOS)
SHORT: dict[str, Any] = {"phase_lengths": [8, 8, 8, 8]}
"""Short episodes (every id but FactConsolidation takes phase_lengths), so one tiny iteration ends a few."""
FACTS_CHOICE: dict[str, Any] = {"length": "6k", "chunk_facts": 100, "action_mode": "choice",
                                "extraction": "templates", "generator": "classic"}
"""FactConsolidation with discrete answers: 5 memorize steps and 100 questions; the template
front-end (the fastest to rebuild at a reset) keys the questions for the memory's view."""


def short(env_id: str) -> dict[str, Any]:
    return dict(FACTS_CHOICE) if env_id == FACTS else dict(SHORT)


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    register_envs()
    yield
    if started:
        ray.shutdown()


def tiny(config: PPOConfig, num_envs: int = 2) -> PPOConfig:
    """One iteration of 64 steps in the driver's own runner (num_env_runners=0)."""
    return (config.env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs, rollout_fragment_length="auto")
            .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
            .debugging(seed=0))


def train_once(config: PPOConfig) -> dict[str, Any]:
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 64
    return result


# ----------------------------------------------------------------------------- training
@pytest.mark.parametrize("memory", [None, "tepa"])
@pytest.mark.parametrize("env_id", FAMILIES)
def test_default_ppo_trains_one_iteration_on_every_family(env_id, memory):
    train_once(tiny(PPOConfig().environment(env_id, env_config={"memory": memory, "flat": True, **SHORT})))


@pytest.mark.parametrize("env_id", SCENARIOS)
def test_default_ppo_trains_one_iteration_on_every_scenario_with_a_memory(env_id):
    """The scenarios are RegimeDrift with a schedule preset: without a memory they train as
    RegimeDrift does (above); the creator test below covers every id both ways."""
    train_once(tiny(PPOConfig().environment(env_id, env_config={"memory": "tepa", **SHORT})))


@pytest.mark.parametrize("memory", ["lww", "tepa_envs.agents.memories.baselines:LastWriteWins"])
def test_a_memory_by_any_name_or_import_path(memory):
    train_once(tiny(PPOConfig().environment("TEPA/FileOps-v0", env_config={"memory": memory, **SHORT})))


@pytest.mark.parametrize("memory", [None, "tepa"])
def test_default_ppo_trains_one_iteration_on_fact_consolidation_with_choices(memory):
    train_once(tiny(PPOConfig().environment(FACTS, env_config={"memory": memory, **FACTS_CHOICE})))


def test_fact_consolidation_in_text_mode_is_refused_naming_the_option():
    assert REQUIRED_CONFIG[FACTS][0] == {"action_mode": "choice"}
    for config in ({"length": "6k"}, {"length": "6k", "action_mode": "text"}):
        with pytest.raises(ValueError, match="action_mode.*Text action space.*'action_mode': 'choice'"):
            make_rllib_env(FACTS, config)
    with pytest.raises(Exception, match="env_config={'action_mode': 'choice'}"):
        tiny(PPOConfig().environment(FACTS, env_config={"length": "6k"})).build_algo()


@pytest.mark.parametrize("env_config", [
    {"phase_lengths": [6, 6, 6, 6]},
    {"memory": "tepa", "phase_lengths": [6, 6, 6, 6]},
    {"memory": "tepa", "shared": False, "phase_lengths": [6, 6, 6, 6], "unreliable_agent": 1},
], ids=["no-memory", "team-memory", "private-memories"])
def test_the_multi_agent_world_through_parallel_pettingzoo_env(env_config):
    config = tiny(PPOConfig().environment(MULTI_AGENT_ENV_ID, env_config=env_config), num_envs=1)
    config = config.multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared")
    train_once(config)


def test_rllib_lstm_is_the_learned_memory_baseline():
    config = tiny(PPOConfig().environment("TEPA/RegimeDrift-v0", env_config={"memory": None, **SHORT}))
    train_once(config.rl_module(model_config=DefaultModelConfig(use_lstm=True, max_seq_len=8, lstm_cell_size=16)))


@pytest.mark.parametrize("mode, env_id", [("vector_entry_point", "TEPA/RegimeDrift-v0"),
                                          ("vector_entry_point", "TEPA/FileOps-v0"),
                                          ("async", "TEPA/PreferenceStream-v0")])
def test_memories_in_vectorised_env_runners(mode, env_id):
    config = tiny(PPOConfig().environment(env_id, env_config={"memory": "tepa", **SHORT}), num_envs=3)
    train_once(config.env_runners(gym_env_vectorize_mode=mode))


def test_a_remote_env_runner_builds_the_memory_from_the_registry():
    config = tiny(PPOConfig().environment("TEPA/RegimeDrift-v0", env_config={"memory": "tepa", **SHORT}))
    train_once(config.env_runners(num_env_runners=1, num_envs_per_env_runner=2))


# ------------------------------------------------------------------------------ seeding
def first_observations(seed: int) -> np.ndarray:
    config = tiny(PPOConfig().environment("TEPA/PreferenceStream-v0", env_config={"memory": "tepa"}))
    config = config.debugging(seed=seed)
    algo = config.build_algo()
    try:
        episodes = algo.env_runner.sample(num_timesteps=40, random_actions=False)
    finally:
        algo.stop()
    return np.concatenate([np.asarray(episode.get_observations()) for episode in episodes])


def test_a_fixed_seed_gives_the_same_samples():
    first, again, other = first_observations(3), first_observations(3), first_observations(4)
    assert first.dtype == np.float32 and first.ndim == 2
    np.testing.assert_array_equal(first, again)
    assert first.shape != other.shape or not np.array_equal(first, other)


def observations_of(env: gym.Env, seed: int, steps: int = 30) -> np.ndarray:
    observation, _ = env.reset(seed=seed)
    rows = [observation]
    for t in range(steps):
        observation, _, terminated, truncated, _ = env.step(t % 3)
        rows.append(observation)
        if terminated or truncated:
            break
    return np.stack(rows)


def test_every_runner_and_sub_environment_gets_its_own_stream():
    """RLlib seeds runner w's sub-environment i with s + w + i: (w=1, i=1) and (w=2, i=0) share it
    unless the creator mixes in the runner's index."""
    creator = RLlibEnvCreator("TEPA/RegimeDrift-v0")
    config = {"memory": "tepa", "n_keys": 4}
    runner1 = creator(EnvContext(config, worker_index=1, num_workers=2))
    runner2 = creator(EnvContext(config, worker_index=2, num_workers=2))
    a, b = observations_of(runner1, seed=10 + 1 + 1), observations_of(runner2, seed=10 + 2 + 0)
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(a, observations_of(creator(EnvContext(config, worker_index=1, num_workers=2)),
                                                     seed=12))


def test_the_vector_entry_point_seeds_each_sub_environment_apart():
    venv = make_rllib_env("TEPA/RegimeDrift-v0", {"memory": "tepa", "n_keys": 4, "num_envs": 3})
    observations, _ = venv.reset(seed=5)
    again, _ = make_rllib_env("TEPA/RegimeDrift-v0", {"memory": "tepa", "n_keys": 4, "num_envs": 3}).reset(seed=5)
    np.testing.assert_array_equal(observations, again)
    assert observations.dtype == np.float32 and observations.shape[0] == 3


# ------------------------------------------------------ the environment inside a runner
@pytest.mark.parametrize("memory", [None, "tepa"])
@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_the_creator_gives_a_float_box_that_pickles_resets_seeds_and_closes(env_id, memory):
    env = RLlibEnvCreator(env_id)(EnvContext({"memory": memory, **short(env_id)}, worker_index=1, num_workers=1))
    assert isinstance(env.observation_space, gym.spaces.Box) and env.observation_space.dtype == np.float32
    before = observations_of(env, seed=7, steps=5)
    clone = pickle.loads(pickle.dumps(env))
    np.testing.assert_array_equal(observations_of(clone, seed=7, steps=5), before)
    assert env.observation_space.contains(before[-1])
    clone.close()
    env.close()


def test_flat_false_keeps_the_dict_observation():
    env = make_rllib_env("TEPA/RegimeDrift-v0", {"memory": "tepa", "flat": False})
    assert isinstance(env.observation_space, gym.spaces.Dict)


def test_bad_env_configs_name_the_field():
    with pytest.raises(TypeError, match="flat"):
        make_rllib_env("TEPA/RegimeDrift-v0", {"flat": "yes"})
    with pytest.raises(ValueError, match="memory_kwargs"):
        make_rllib_env("TEPA/RegimeDrift-v0", {"memory_kwargs": {"alpha": 1.0}})
    with pytest.raises(TypeError, match="memory_kwargs"):
        make_rllib_env("TEPA/RegimeDrift-v0", {"memory": "tepa", "memory_kwargs": [1]})
    with pytest.raises(ValueError, match="shared"):
        make_rllib_env("TEPA/RegimeDrift-v0", {"shared": True})
    with pytest.raises(ValueError, match="env_id"):
        make_rllib_env("TEPA/Nope-v0", {})
    with pytest.raises(TypeError, match="env_config"):
        make_rllib_env("TEPA/RegimeDrift-v0", [("memory", "tepa")])
    with pytest.raises(ValueError, match="env_ids"):
        register_envs(["CartPole-v1"])
    with pytest.raises(TypeError, match="env_ids"):
        register_envs("TEPA/RegimeDrift-v0")


def test_without_rllib_the_import_names_the_extra():
    """Ray without its rllib pieces (dm_tree, ...) or no Ray at all: DependencyNotInstalled, not a bare
    ImportError (simulated in a fresh interpreter by blocking ray.rllib)."""
    code = ("import sys; sys.modules['ray.rllib'] = None\n"
            "from tepa_envs.error import DependencyNotInstalled\n"
            "try:\n    import tepa_envs.wrappers.rllib\n"
            "except DependencyNotInstalled as exc:\n    print('refused:', exc)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "refused:" in result.stdout and "pip install" in result.stdout and "ray[rllib]" in result.stdout
