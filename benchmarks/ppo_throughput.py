"""PPO (Stable-Baselines3) on RegimeDrift-v0: training throughput with and without memory features,
per-environment memories against batched ones, and the time to reach the README's full-reversal success.

    python benchmarks/ppo_throughput.py [--n-envs 64] [--runs 5] [--json PATH]
    python benchmarks/ppo_throughput.py --part curve [--cap 102400]

Four ways to feed PPO, with the same seeds (CPU build of torch, one thread):

* ``per-env, no memory``: ``DummyVecEnv`` of ``gym.make("TEPA/RegimeDrift-v0")``, ``MlpPolicy``;
* ``per-env, TEPA``: ``DummyVecEnv`` of ``MemoryObservation(gym.make(...), "tepa")``, ``MultiInputPolicy``;
* ``batched, no memory``: the native vector env through :class:`~tepa_envs.wrappers.sb3.SB3VecEnv`;
* ``batched, TEPA``: ``SB3VecEnv(MemoryObservationV(native, "tepa"))``.

The batched and per-env forms of one input give the policy the same observations
(``tests/wrappers/test_vector_memory.py``), so PPO trains the same policy from
them: they differ only in time.

Part ``throughput`` (default): ``--runs`` interleaved runs of every config, each
training ``--rollouts`` rollouts of ``--n-envs`` x ``--n-steps`` steps; reported
are timesteps per CPU second of the whole ``learn`` (collection and updates) and
of rollout collection alone, as medians with their spread (min to max), and the
ratios batched / per-env taken within each run.

Part ``curve``: the README's PPO setting (4 envs, ``n_steps=256``, ``batch_size=64``,
seed 0; ``examples/ppo_regime_drift.py``), trained in chunks of ``--chunk``
timesteps; after each chunk the policy is evaluated greedily on the example's
20 held-out episodes. Reported per config: the timesteps and the training CPU
seconds (evaluation excluded) until full-reversal success reaches
``--target`` (0.936, the README's TEPA figure), or the best success when
``--cap`` timesteps are reached first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

import tepa_envs  # noqa: F401
from tepa_envs.core import PHASE_NAMES
from tepa_envs.wrappers import MemoryObservation, MemoryObservationV
from tepa_envs.wrappers.sb3 import SB3VecEnv

ENV_ID = "TEPA/RegimeDrift-v0"
EVAL_SEED_OFFSET = 100_000  # as examples/ppo_regime_drift.py
README_TARGET = 0.936  # the README's full-reversal success of MemoryObservation(TEPA) after 60,000 steps

CONFIGS: dict[str, tuple[str, str | None]] = {  # label: (form, memory)
    "per-env, no memory": ("per-env", None),
    "per-env, TEPA": ("per-env", "tepa"),
    "batched, no memory": ("batched", None),
    "batched, TEPA": ("batched", "tepa"),
}


def make_vec(form: str, memory: str | None, n_envs: int) -> VecEnv:
    if form == "per-env":
        return DummyVecEnv([lambda: gym.make(ENV_ID) if memory is None
                            else MemoryObservation(gym.make(ENV_ID), memory=memory) for _ in range(n_envs)])
    native = gym.make_vec(ENV_ID, num_envs=n_envs, vectorization_mode="vector_entry_point")
    return SB3VecEnv(native if memory is None else MemoryObservationV(native, memory=memory))


class RolloutClock(BaseCallback):
    """CPU seconds spent collecting rollouts."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self._start = 0.0

    def _on_rollout_start(self) -> None:
        self._start = time.process_time()

    def _on_rollout_end(self) -> None:
        self.seconds += time.process_time() - self._start

    def _on_step(self) -> bool:
        return True


def make_model(form: str, memory: str | None, n_envs: int, n_steps: int, batch_size: int, seed: int) -> PPO:
    vec_env = make_vec(form, memory, n_envs)
    vec_env.seed(seed)
    policy = "MlpPolicy" if memory is None else "MultiInputPolicy"
    return PPO(policy, vec_env, n_steps=n_steps, batch_size=batch_size, seed=seed, device="cpu", verbose=0)


def throughput(args: argparse.Namespace) -> dict[str, Any]:
    timesteps = args.rollouts * args.n_envs * args.n_steps
    learn: dict[str, list[float]] = {label: [] for label in CONFIGS}
    collect: dict[str, list[float]] = {label: [] for label in CONFIGS}
    for _ in range(args.runs):
        for label, (form, memory) in CONFIGS.items():
            model = make_model(form, memory, args.n_envs, args.n_steps, args.batch_size, args.seed)
            clock = RolloutClock()
            start = time.process_time()
            model.learn(total_timesteps=timesteps, callback=clock)
            learn[label].append(timesteps / (time.process_time() - start))
            collect[label].append(timesteps / clock.seconds)
            model.env.close()

    def spread(values: list[float]) -> dict[str, float]:
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}

    ratios = {}
    for memory_label in ("no memory", "TEPA"):
        for name, rates in (("learn", learn), ("collect", collect)):
            batched, per_env = rates[f"batched, {memory_label}"], rates[f"per-env, {memory_label}"]
            ratios[f"{name}: batched / per-env, {memory_label}"] = spread([b / p for b, p in zip(batched, per_env)])
    for form in ("per-env", "batched"):
        for name, rates in (("learn", learn), ("collect", collect)):
            ratios[f"{name}: {form}, TEPA / no memory"] = spread(
                [a / b for a, b in zip(rates[f"{form}, TEPA"], rates[f"{form}, no memory"])])
    print(f"PPO on {ENV_ID}: {args.n_envs} envs x {args.n_steps} steps x {args.rollouts} rollouts "
          f"({timesteps} timesteps), batch {args.batch_size}, {args.runs} interleaved runs; "
          "timesteps per CPU second (median, min-max)")
    for label in CONFIGS:
        print(f"  {label:<20} learn {spread(learn[label])['median']:>8,.0f} "
              f"({min(learn[label]):,.0f}-{max(learn[label]):,.0f})   collect "
              f"{spread(collect[label])['median']:>9,.0f} ({min(collect[label]):,.0f}-{max(collect[label]):,.0f})")
    for name, r in ratios.items():
        print(f"  {name:<40} {r['median']:>6.2f}x  (min {r['min']:.2f}, max {r['max']:.2f})")
    return {"n_envs": args.n_envs, "n_steps": args.n_steps, "rollouts": args.rollouts, "runs": args.runs,
            "batch_size": args.batch_size, "learn_steps_per_second": {k: spread(v) for k, v in learn.items()},
            "collect_steps_per_second": {k: spread(v) for k, v in collect.items()}, "ratios": ratios}


def full_reversal_success(model: PPO, memory: str | None, episodes: int, seed: int) -> float:
    """Greedy full-reversal success over the example's held-out episodes."""
    env = gym.make(ENV_ID) if memory is None else MemoryObservation(gym.make(ENV_ID), memory=memory)
    hits = count = 0
    full = PHASE_NAMES.index("full_reversal")
    for episode_seed in range(EVAL_SEED_OFFSET + seed, EVAL_SEED_OFFSET + seed + episodes):
        observation, info = env.reset(seed=episode_seed)
        done = False
        while not done:
            phase = info["oracle"]["phase"]
            action, _ = model.predict(observation, deterministic=True)
            observation, reward, terminated, truncated, info = env.step(int(action))
            if phase == full:
                hits += reward
                count += 1
            done = terminated or truncated
    return hits / count


def curve(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"target": args.target, "chunk": args.chunk, "cap": args.cap, "n_envs": 4,
                           "n_steps": 256, "batch_size": 64, "seed": args.seed, "configs": {}}
    print(f"PPO, the README's setting (4 envs, n_steps 256, batch 64, seed {args.seed}); evaluation every "
          f"{args.chunk} timesteps on 20 held-out episodes; target full-reversal success {args.target}")
    for label, (form, memory) in CONFIGS.items():
        if label not in args.curve_configs:
            continue
        model = make_model(form, memory, 4, 256, 64, args.seed)
        trained = 0
        seconds = 0.0
        points: list[tuple[int, float, float]] = []
        reached = None
        while trained < args.cap:
            start = time.process_time()
            model.learn(total_timesteps=args.chunk, reset_num_timesteps=trained == 0)
            seconds += time.process_time() - start
            trained = model.num_timesteps
            success = full_reversal_success(model, memory, 20, args.seed)
            points.append((trained, seconds, success))
            if success >= args.target:
                reached = (trained, seconds)
                break
        model.env.close()
        best = max(points, key=lambda p: p[2])
        out["configs"][label] = {"curve": points, "reached": reached, "best": best}
        status = (f"reached {args.target} after {reached[0]:,} timesteps, {reached[1]:.1f} CPU s of training"
                  if reached else f"not reached within {args.cap:,} timesteps ({seconds:.1f} CPU s); best "
                                  f"{best[2]:.3f} at {best[0]:,}")
        print(f"  {label:<20} {status}")
    curves = {label: [p[2] for p in c["curve"]] for label, c in out["configs"].items()}
    for memory_label in ("no memory", "TEPA"):
        a, b = curves.get(f"per-env, {memory_label}"), curves.get(f"batched, {memory_label}")
        if a is not None and b is not None:
            out[f"same curve, {memory_label}"] = a == b
            print(f"  per-env and batched {memory_label}: {'the same' if a == b else 'DIFFERENT'} success curve")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("throughput", "curve", "both"), default="throughput")
    parser.add_argument("--n-envs", type=int, default=64)
    parser.add_argument("--n-steps", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--rollouts", type=int, default=2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=4096)
    parser.add_argument("--cap", type=int, default=102_400)
    parser.add_argument("--target", type=float, default=README_TARGET)
    parser.add_argument("--curve-configs", default="per-env, TEPA;batched, TEPA;per-env, no memory",
                        help="configs of part curve, separated by ';'")
    parser.add_argument("--json", metavar="PATH", help="write every figure to PATH")
    args = parser.parse_args()
    args.curve_configs = [c.strip() for c in args.curve_configs.split(";")]
    torch.set_num_threads(1)
    result: dict[str, Any] = {"benchmark": "ppo_throughput", "torch": torch.__version__}
    if args.part in ("throughput", "both"):
        result["throughput"] = throughput(args)
    if args.part in ("curve", "both"):
        result["curve"] = curve(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
