"""``tepa-bench rl --engine rllib`` and the twin agent: the RLlib engine trains units into the same
store and schema as the sb3 engine, side by side, and resumes on its own; both engines evaluate on
the same held-out episodes with the same observations; agents RLlib cannot run are refused; the
twin agent trains on each environment's fully observed twin.

The RLlib tests are skipped, with the reason, without ``ray[rllib]`` (the ``clients`` extra)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Iterator

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="the RL study needs Stable-Baselines3 (pip install 'tepa-envs[rl]')")

import tepa_envs  # noqa: E402
from tepa_envs.agents.evaluation.engine.store import Store  # noqa: E402
from tepa_envs.agents.evaluation.studies.rl_agents import TWIN_AGENT, parse_agent, twin_of  # noqa: E402
from tepa_envs.agents.evaluation.studies.rl_study import (  # noqa: E402
    SIZES, EnvSpec, analyse, builtin_spec, drift_phases, finished_units, parse_rl_spec, prepare_store, read_units,
    run_study,
)
from tepa_envs.wrappers import sb3_engine  # noqa: E402

try:
    import ray
    from tepa_envs.wrappers import rllib_engine
    HAVE_RLLIB, WHY = True, ""
except ImportError as exc:  # ray[rllib] brings dm_tree, pandas, ...: any of them missing
    HAVE_RLLIB, WHY = False, f"Ray RLlib is not importable ({exc}): pip install 'tepa-envs[clients]'"
needs_rllib = pytest.mark.skipif(not HAVE_RLLIB, reason=WHY)

SMALL = {"name": "rl-engines", "agents": ["ppo", "ppo+tepa", TWIN_AGENT], "envs": ["TEPA/RegimeDrift-v0"],
         "train_seeds": [0], "timesteps": 512, "checkpoints": 1, "eval_episodes": 2, "curve_episodes": 1,
         "hyper": {"n_envs": 4, "n_steps": 128, "batch_size": 128, "n_epochs": 1}}
"""Three units of one 512-step rollout each, two held-out episodes at the end and one at step 0."""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray (one CPU) for the module: the study's RayBackend joins it and leaves it running."""
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    if started:
        ray.shutdown()


def rows(store: Store) -> dict[str, tuple[Any, ...]]:
    return {row[0]: row[1:] for row in store.connection.execute(
        "SELECT unit_id, engine, agent, train_seed, finished_utc FROM rl_units")}


def schema(data: Any) -> Any:
    """The keys of a nested rl.json dict (list lengths and values left out)."""
    if isinstance(data, dict):
        return {key: schema(value) for key, value in data.items() if key != "versions"}
    return type(data).__name__


@needs_rllib
def test_rllib_units_share_the_store_and_schema_with_sb3_and_resume_on_their_own(tmp_path, local_ray):
    rllib, sb3 = parse_rl_spec({**SMALL, "engine": "rllib"}), parse_rl_spec({**SMALL, "engine": "sb3"})
    stored: list[str] = []

    def kill_after_one(job):
        stored.append(job.describe())
        if len(stored) == 1:
            raise KeyboardInterrupt  # killed right after its first unit is stored

    with Store.open(tmp_path / "rl.db") as store:
        with pytest.raises(KeyboardInterrupt):
            run_study(rllib, store, on_unit=kill_after_one)
        done = finished_units(store, rllib)
        assert 1 <= len(done) < 3  # the unit running beside the first one is awaited and stored too
        before = rows(store)
        assert {engine for engine, *_ in before.values()} == {"rllib"}

        again = run_study(rllib, store)
        assert (again.planned, again.skipped, again.trained) == (3, len(done), 3 - len(done))
        assert all(rows(store)[unit] == row for unit, row in before.items())  # finished units not redone

        assert finished_units(store, sb3) == set()  # the sb3 engine's units are its own
        assert run_study(sb3, store).trained == 3
        assert run_study(rllib, store).trained == 0 and run_study(sb3, store).trained == 0
        engines = [engine for engine, *_ in rows(store).values()]
        assert sorted(engines) == ["rllib"] * 3 + ["sb3"] * 3
        assert store.count() == 6 * (2 + 1)  # final evaluation + one checkpoint, per unit
        assert store.check() == []
        by_engine = {spec.engine: analyse(spec, read_units(store, spec)) for spec in (rllib, sb3)}
    assert schema(by_engine["rllib"]) == schema(by_engine["sb3"])
    assert by_engine["rllib"]["spec"]["engine"] == "rllib" and "ray" in by_engine["rllib"]["versions"]
    assert by_engine["rllib"]["twins"] == [TWIN_AGENT]
    env = by_engine["rllib"]["envs"][0]["agents"]
    assert env["ppo"]["curve"]["steps"] == [0, 512] and env["ppo"]["path"] == "native"
    json.dumps(by_engine["rllib"])


def test_an_old_store_gets_the_engine_column(tmp_path):
    with Store.open(tmp_path / "old.db") as store:
        store.connection.execute("CREATE TABLE rl_units (unit_id TEXT PRIMARY KEY, study TEXT NOT NULL)")
        store.connection.execute("INSERT INTO rl_units VALUES ('u', 's')")
        prepare_store(store)
        prepare_store(store)  # twice: nothing more
        assert store.connection.execute("SELECT engine FROM rl_units").fetchall() == [("sb3",)]


@needs_rllib
@pytest.mark.parametrize("agent, field", [
    ({"label": "mine", "algorithm": "stable_baselines3:A2C"}, "agents[0] (mine): the rllib engine runs PPO"),
    ("ppo-nope", "agents[0]: unknown agent 'ppo-nope'"),
    ({"label": "x", "twin": "yes"}, "agents[0].twin"),
])
def test_the_rllib_engine_refuses_agents_it_cannot_run(agent, field):
    with pytest.raises((ValueError, TypeError)) as info:
        parse_rl_spec({**SMALL, "engine": "rllib", "agents": [agent]})
    assert field in str(info.value)


def test_the_twin_agent_is_in_the_quick_spec_and_trains_on_the_twin():
    quick = builtin_spec("quick")
    assert TWIN_AGENT in [a.label for a in quick.agents] and SIZES["quick"]["agents"][-1] == TWIN_AGENT
    (job,) = [j for j in quick.jobs() if j.agent.twin and j.env_id == "TEPA/RegimeDrift-Poisson-v0"
              and j.train_seed == 0]
    assert job.target_env() == ("TEPA/RegimeDrift-Poisson-MDP-v0", {})
    plain = sb3_engine.single_env(replace(job, agent=parse_agent("ppo")))()
    twin = sb3_engine.single_env(job)()
    assert twin.spec is not None and twin.spec.id == "TEPA/RegimeDrift-Poisson-MDP-v0"
    n_values = len(twin.unwrapped.values)  # type: ignore[attr-defined]
    assert twin.observation_space.shape[0] == plain.observation_space.shape[0] + n_values + 1  # the truth, one-hot
    assert sb3_engine.native_path(job)  # the twin has the native vector env too
    with pytest.raises(ValueError, match="has no fully observed twin"):
        twin_of("TEPA/FactConsolidation-v0")
    with pytest.raises(ValueError, match="agents\\[0\\] .* has no fully observed twin"):
        parse_rl_spec({**SMALL, "agents": [TWIN_AGENT], "envs": ["TEPA/RegimeDrift-MDP-v0"]})
    assert set(tepa_envs.TWINS[twin_of(e)] for e in tepa_envs.TASK_STREAM_IDS) == set(tepa_envs.TASK_STREAM_IDS)


class Recorder:
    """A fixed policy that acts on what it observes (arg-max of a fixed linear map) and keeps every
    observation batch: the same decisions from the same inputs under either engine's loop."""

    def __init__(self, size: int, n_actions: int) -> None:
        self.weights = np.random.default_rng(7).normal(size=(size, n_actions))
        self.seen: list[np.ndarray] = []
        self.training = False

    def act(self, observations: np.ndarray) -> np.ndarray:
        observations = np.asarray(observations, dtype=np.float32)
        self.seen.append(observations.copy())
        return (observations @ self.weights).argmax(axis=1)

    # the Stable-Baselines3 side (BaseAlgorithm.predict)
    def predict(self, observations: np.ndarray, state: Any = None, episode_start: Any = None,
                deterministic: bool = False) -> tuple[np.ndarray, Any]:
        assert deterministic
        return self.act(observations), state

    # the RLlib side (RLModule)
    def is_stateful(self) -> bool:
        return False

    def forward_inference(self, batch: dict[str, Any]) -> dict[str, Any]:
        import torch

        logits = np.zeros((len(batch["obs"]), self.weights.shape[1]), dtype=np.float32)
        logits[np.arange(len(logits)), self.act(batch["obs"].numpy())] = 1.0
        return {"action_dist_inputs": torch.as_tensor(logits)}

    def eval(self) -> None:
        pass

    def train(self, mode: bool = True) -> None:
        pass


@needs_rllib
@pytest.mark.parametrize("agent", ["ppo-framestack", "ppo+tepa", TWIN_AGENT])
def test_both_engines_evaluate_the_same_episodes_on_the_same_observations(agent):
    spec = parse_rl_spec({**SMALL, "agents": [agent], "envs": [{"id": "TEPA/RegimeDrift-v0",
                                                                "kwargs": {"phase_lengths": [6, 6, 6, 6]}}],
                          "eval_episodes": 3}, check_engine=False)
    (job, *_) = spec.jobs()
    size = sb3_engine.evaluation_env(job, 1).observation_space.shape[0]
    assert size == rllib_engine.single_env(job).observation_space.shape[0]
    n_actions = int(sb3_engine.evaluation_env(job, 1).action_space.n)
    sb3_policy, rllib_policy = Recorder(size, n_actions), Recorder(size, n_actions)
    by_sb3 = sb3_engine.evaluate_policy(sb3_policy, job, 3, 0)  # type: ignore[arg-type]
    by_rllib = rllib_engine.evaluate_module(rllib_policy, job, 3, 0)
    assert by_sb3.success == by_rllib.success and by_sb3.phase == by_rllib.phase
    assert len(by_sb3.success) == 3 and all(len(s) == 24 for s in by_sb3.success)
    # the same observations while every episode runs (sb3's loop keeps stepping finished ones)
    steps = len(rllib_policy.seen)
    assert steps == 24 and np.array_equal(np.stack(sb3_policy.seen[:steps]), np.stack(rllib_policy.seen))
    if agent == "ppo-framestack":
        assert not rllib_policy.seen[0][:, : size * 3 // 4].any()  # zero padding before the first frame


@needs_rllib
def test_rllib_ppo_settings_match_the_study_hyperparameters():
    (job, *_) = parse_rl_spec({**SMALL, "engine": "rllib"}, check_engine=False).jobs()
    config = rllib_engine.algorithm_config(job)
    assert config.train_batch_size_per_learner == 4 * 128 and config.minibatch_size == 128
    assert (config.num_epochs, config.lr, config.gamma, config.entropy_coeff) == (1, 3e-4, 0.9, 0.01)
    assert (config.lambda_, config.clip_param, config.vf_loss_coeff, config.grad_clip) == (0.95, 0.2, 0.5, 0.5)
    assert config.use_kl_loss is False and config.num_env_runners == 0 and config.seed == 0
    lstm = rllib_engine.model_config(parse_agent("recurrent-ppo"), job.hyper)
    assert lstm.use_lstm and lstm.lstm_cell_size == 64 and lstm.fcnet_hiddens == [64, 64]
    assert lstm.max_seq_len == 128 and not lstm.vf_share_layers


@pytest.mark.parametrize("env, names, drift, score", [
    (EnvSpec("TEPA/RegimeDrift-v0", {"phase_lengths": [6, 6, 6, 6]}),
     ("stable", "light_drift", "full_reversal", "partial_return"), (2,), "reversal"),
    (EnvSpec("TEPA/RegimeDrift-v0", {"schedule": "poisson"}), None, None, "after first change"),
    (EnvSpec("TEPA/PreferenceStream-v0", {"n_values": 3}), None, (2,), "reversal"),
])
def test_drift_phases_of_an_environment_with_kwargs_come_from_its_declared_contract(env, names, drift, score):
    """With kwargs the phases are read from the environment (TaskEnv.phase_names, reversal_phases)."""
    found_names, found_drift, found_score = drift_phases(env)
    assert found_score == score and (names is None or found_names == names)
    if drift is not None:
        assert found_drift == drift
    if score == "after first change":
        assert found_drift == tuple(range(1, len(found_names)))
