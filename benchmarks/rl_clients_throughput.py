"""Environment + memory steps per second under Ray RLlib and under Stable-Baselines3, each as a
ratio to CartPole-v1 measured in the same run (issue 32's closing note; docs/training.md).

    python benchmarks/rl_clients_throughput.py [--num-envs 8] [--rollout 256] [--iterations 3]
                                               [--sample-steps 20000] [--runs 3] [--json PATH]

Both clients get the same environment stack, built the way each documents it:
``FlatObservation(MemoryObservation(gym.make("TEPA/RegimeDrift-v0"), "tepa"))`` (a float
``Box``), against ``gym.make("CartPole-v1")``; SB3 through ``DummyVecEnv`` of those, RLlib
through :func:`tepa_envs.wrappers.rllib.register_envs` (``env_config={"memory": "tepa"}``)
and its default ``gym_env_vectorize_mode="sync"`` (a ``SyncVectorEnv`` of the same stack).

Two measures, each over ``--num-envs`` sub-environments in one process:

* ``sample``: random actions, no policy: SB3's ``VecEnv.step`` loop, RLlib's local
  ``SingleAgentEnvRunner.sample(random_actions=True)`` (episode bookkeeping and connectors
  included), ``--sample-steps`` steps;
* ``ppo``: PPO with each library's default MLP, ``--num-envs`` x ``--rollout`` steps per
  iteration, minibatch 256, 4 epochs, ``--iterations`` iterations after one untimed warm-up
  iteration; steps per wall second of the whole training (collection and updates).

The process is pinned to (at most) 2 cores and torch to 1 thread; Ray runs locally with
``num_cpus=2`` and ``num_env_runners=0`` (the driver samples and learns). Reported are
medians over ``--runs`` interleaved runs, and the ratio to CartPole-v1 of each median.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import torch

import tepa_envs
from tepa_envs.wrappers import FlatObservation, MemoryObservation

ENVS: dict[str, tuple[str, str | None]] = {  # label: (env id, memory)
    "CartPole-v1": ("CartPole-v1", None),
    "RegimeDrift + TEPA": ("TEPA/RegimeDrift-v0", "tepa"),
}


def make_env(env_id: str, memory: str | None) -> gym.Env:
    if env_id == "CartPole-v1":
        return gym.make(env_id)
    env: gym.Env = gym.make(env_id)
    if memory is not None:
        env = MemoryObservation(env, memory=memory)
    return FlatObservation(env)


def _cartpole_creator(config: dict[str, Any]) -> gym.Env:
    return gym.make("CartPole-v1")


# ------------------------------------------------------------------------ Stable-Baselines3
def sb3_sample(env_id: str, memory: str | None, num_envs: int, steps: int) -> float:
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: make_env(env_id, memory) for _ in range(num_envs)])
    venv.seed(0)
    venv.reset()
    rng = np.random.default_rng(0)
    n_actions = int(venv.action_space.n)
    rounds = max(1, steps // num_envs)
    start = time.perf_counter()
    for _ in range(rounds):
        venv.step(rng.integers(0, n_actions, size=num_envs))
    elapsed = time.perf_counter() - start
    venv.close()
    return rounds * num_envs / elapsed


def sb3_ppo(env_id: str, memory: str | None, num_envs: int, rollout: int, iterations: int) -> float:
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: make_env(env_id, memory) for _ in range(num_envs)])
    model = PPO("MlpPolicy", venv, n_steps=rollout, batch_size=256, n_epochs=4, seed=0, device="cpu", verbose=0)
    model.learn(num_envs * rollout)  # warm-up iteration
    start = time.perf_counter()
    model.learn(num_envs * rollout * iterations, reset_num_timesteps=False)
    elapsed = time.perf_counter() - start
    venv.close()
    return num_envs * rollout * iterations / elapsed


# ----------------------------------------------------------------------------- Ray RLlib
def rllib_config(env_id: str, memory: str | None, num_envs: int, rollout: int) -> Any:
    from ray.rllib.algorithms.ppo import PPOConfig

    env_config = {} if env_id == "CartPole-v1" else {"memory": memory}
    name = "bench-CartPole-v1" if env_id == "CartPole-v1" else env_id
    return (PPOConfig().environment(name, env_config=env_config)
            .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs, rollout_fragment_length=rollout)
            .training(train_batch_size_per_learner=num_envs * rollout, minibatch_size=256, num_epochs=4)
            .debugging(seed=0))


def rllib_sample(env_id: str, memory: str | None, num_envs: int, steps: int) -> float:
    algo = rllib_config(env_id, memory, num_envs, 64).build_algo()
    try:
        runner = algo.env_runner
        runner.sample(num_timesteps=num_envs * 8, random_actions=True)  # warm-up (first reset)
        start = time.perf_counter()
        episodes = runner.sample(num_timesteps=steps, random_actions=True)
        elapsed = time.perf_counter() - start
        done = sum(len(episode) for episode in episodes)
    finally:
        algo.stop()
    return done / elapsed


def rllib_ppo(env_id: str, memory: str | None, num_envs: int, rollout: int, iterations: int) -> float:
    algo = rllib_config(env_id, memory, num_envs, rollout).build_algo()
    try:
        first = algo.train()["env_runners"]["num_env_steps_sampled_lifetime"]
        start = time.perf_counter()
        for _ in range(iterations):
            last = algo.train()["env_runners"]["num_env_steps_sampled_lifetime"]
        elapsed = time.perf_counter() - start
    finally:
        algo.stop()
    return (last - first) / elapsed


# ---------------------------------------------------------------------------------- main
def pin_two_cores() -> list[int]:
    cores = sorted(os.sched_getaffinity(0))[:2]
    os.sched_setaffinity(0, cores)
    torch.set_num_threads(1)
    return cores


def median_and_spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--rollout", type=int, default=256, help="steps per sub-environment per PPO iteration")
    parser.add_argument("--iterations", type=int, default=3, help="timed PPO iterations")
    parser.add_argument("--sample-steps", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", default=None, help="also write the result here")
    args = parser.parse_args(argv)
    for name in ("num_envs", "rollout", "iterations", "sample_steps", "runs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")

    cores = pin_two_cores()
    import ray
    from ray.tune.registry import register_env

    from tepa_envs.wrappers.rllib import register_envs

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    register_envs(["TEPA/RegimeDrift-v0"])
    register_env("bench-CartPole-v1", _cartpole_creator)

    measures: dict[str, Callable[..., float]] = {
        "sample/SB3": lambda e, m: sb3_sample(e, m, args.num_envs, args.sample_steps),
        "sample/RLlib": lambda e, m: rllib_sample(e, m, args.num_envs, args.sample_steps),
        "ppo/SB3": lambda e, m: sb3_ppo(e, m, args.num_envs, args.rollout, args.iterations),
        "ppo/RLlib": lambda e, m: rllib_ppo(e, m, args.num_envs, args.rollout, args.iterations),
    }
    raw: dict[str, dict[str, list[float]]] = {measure: {label: [] for label in ENVS} for measure in measures}
    for _ in range(args.runs):  # interleaved: a slow moment of the machine hits every cell alike
        for measure, run in measures.items():
            for label, (env_id, memory) in ENVS.items():
                raw[measure][label].append(run(env_id, memory))
    ray.shutdown()

    cells = {measure: {label: median_and_spread(values) for label, values in by_env.items()}
             for measure, by_env in raw.items()}
    ratios = {measure: by_env["RegimeDrift + TEPA"]["median"] / by_env["CartPole-v1"]["median"]
              for measure, by_env in cells.items()}
    import ray as ray_module
    import stable_baselines3

    result = {
        "conditions": {
            "cores": cores, "torch_threads": torch.get_num_threads(), "num_envs": args.num_envs,
            "rollout": args.rollout, "iterations": args.iterations, "sample_steps": args.sample_steps,
            "runs": args.runs, "load_average_at_end": os.getloadavg(), "cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(), "ray": ray_module.__version__, "sb3": stable_baselines3.__version__,
            "torch": torch.__version__, "gymnasium": gym.__version__, "tepa_envs": tepa_envs.__version__,
        },
        "steps_per_second": cells,
        "ratio_to_cartpole": ratios,
    }
    print("| measure | client | CartPole-v1 steps/s | RegimeDrift + TEPA steps/s | ratio to CartPole |")
    print("|---|---|---:|---:|---:|")
    for measure, by_env in cells.items():
        kind, client = measure.split("/")
        print(f"| {kind} | {client} | {by_env['CartPole-v1']['median']:,.0f} | "
              f"{by_env['RegimeDrift + TEPA']['median']:,.0f} | {ratios[measure]:.2f} |")
    text = json.dumps(result, indent=2)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            out.write(text + "\n")
    return result


if __name__ == "__main__":
    main()
