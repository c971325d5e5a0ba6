"""One error vocabulary: ``TepaError`` for the project's own errors, ``TypeError`` for a
wrong type, ``ValueError`` for a wrong value, Gymnasium's errors where they fit."""

from __future__ import annotations

import inspect
import json
import sys

import gymnasium as gym
import gymnasium.error
import numpy as np
import pytest

import tepa_envs
from tepa_envs import error
from tepa_envs.agents import MemoryAgent
from tepa_envs.core import check_choice, check_int, check_number, check_str
from tepa_envs.error import DataFormatError, DependencyNotInstalled, ResetNeeded, SandboxError, TepaError
from tepa_envs.facts.data import generate_records
from tepa_envs.facts.loader import load_records, parse_context, validate_record, write_records
from tepa_envs.file_ops.sandbox import Sandbox

FACTS = "TEPA/FactConsolidation-v0"


def exported_errors() -> list[type[BaseException]]:
    return [getattr(error, name) for name in error.__all__]


# ----------------------------------------------------------------- hierarchy
def test_every_exported_name_is_an_exception_class():
    for cls in exported_errors():
        assert inspect.isclass(cls) and issubclass(cls, Exception), cls


def test_our_errors_are_tepa_errors_and_gymnasium_errors_stay_gymnasium_errors():
    ours = [cls for cls in exported_errors() if cls.__module__ == error.__name__]
    theirs = [cls for cls in exported_errors() if cls.__module__ != error.__name__]
    assert {cls.__name__ for cls in ours} >= {"TepaError", "DataFormatError", "SandboxError", "TrialsUnavailable"}
    assert {cls.__name__ for cls in theirs} == {"ResetNeeded", "InvalidAction", "DependencyNotInstalled"}
    for cls in ours:
        assert issubclass(cls, TepaError), cls
    for cls in theirs:
        assert issubclass(cls, gymnasium.error.Error) and not issubclass(cls, TepaError), cls


def test_named_subclasses_refine_the_builtin_errors():
    assert issubclass(DataFormatError, ValueError)
    assert issubclass(SandboxError, ValueError)
    assert issubclass(error.TrialsUnavailable, RuntimeError)
    with pytest.raises(TepaError):
        raise DataFormatError("x")
    with pytest.raises(ValueError):
        raise SandboxError("a/b", "refused")


# ------------------------------------------------------------- check helpers
def test_checks_split_wrong_types_from_wrong_values():
    assert check_int("n", np.int64(3), low=1, high=3) == 3
    for bad in ("3", 3.0, True, None):
        with pytest.raises(TypeError, match="n must be an int"):
            check_int("n", bad)
    with pytest.raises(ValueError, match=r"n must be in \[1, 3\], got 4"):
        check_int("n", 4, low=1, high=3)
    with pytest.raises(ValueError, match="n must be >= 2, got 1"):
        check_int("n", 1, low=2)
    with pytest.raises(ValueError, match="n must be <= 0, got 1"):
        check_int("n", 1, high=0)
    assert check_number("x", np.float32(0.5)) == 0.5
    with pytest.raises(TypeError, match="x must be a number"):
        check_number("x", "0.5")
    assert check_str("s", "") == ""
    with pytest.raises(TypeError, match="s must be a str, got bytes"):
        check_str("s", b"x")
    assert check_choice("c", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match="c must be one of a, b, got 'z'"):
        check_choice("c", "z", ("a", "b"))
    with pytest.raises(ValueError, match="c must be one of a, got"):
        check_choice("c", ["unhashable"], {"a": 1})


# ------------------------------------------------------------------ env misuse
def small(env_id: str) -> dict:
    return {"length": "6k"} if env_id == FACTS else {}


@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_step_before_reset_raises_reset_needed(env_id):
    env = gym.make(env_id, **small(env_id))
    action = env.action_space.sample()
    with pytest.raises(ResetNeeded):
        env.step(action)  # Gymnasium's OrderEnforcing wrapper
    with pytest.raises(ResetNeeded, match="reset"):
        env.unwrapped.step(action)  # the environment itself
    env.close()


@pytest.mark.parametrize("env_id", tepa_envs.ENV_IDS)
def test_bad_actions_raise_type_error_or_value_error(env_id):
    env = gym.make(env_id, **small(env_id)).unwrapped
    env.reset(seed=0)
    if isinstance(env.action_space, gym.spaces.Discrete):
        wrong_types, wrong_values = ("0", 0.0, None, np.array([0])), (env.action_space.n, -1)
    else:
        wrong_types, wrong_values = (0, None, b"x"), ()
    for action in wrong_types:
        with pytest.raises(TypeError, match="action must be"):
            env.step(action)
    for action in wrong_values:
        with pytest.raises(ValueError, match="action must be"):
            env.step(action)
    with pytest.raises(TypeError, match="value must be a str"):
        env.to_action(0)
    env.close()


def test_closed_sandbox_raises_reset_needed(tmp_path):
    sandbox = Sandbox(parent_dir=str(tmp_path))
    with pytest.raises(ResetNeeded, match="reset"):
        sandbox.write("a.txt", "x")
    sandbox.reset()
    sandbox.write("a.txt", "x")
    sandbox.close()
    for use in (lambda: sandbox.read("a.txt"), lambda: sandbox.root, lambda: sandbox.list(".")):
        with pytest.raises(ResetNeeded, match="closed"):
            use()


def test_agent_used_before_reset_raises_reset_needed():
    agent = MemoryAgent("tepa")
    with pytest.raises(ResetNeeded, match="reset"):
        agent.act({"key": "k", "context": ""})
    with pytest.raises(ResetNeeded, match="reset"):
        agent.pass_action()


# ------------------------------------------------------------------ bad data
@pytest.fixture(scope="module")
def record() -> dict:
    return generate_records("6k", seed=0)["sh"]


@pytest.mark.parametrize("name, text, where", [
    ("broken.json", "[{\"context\": ", "broken.json is not valid JSON"),
    ("broken.jsonl", "{}\n{not json}\n", "broken.jsonl line 2 is not valid JSON"),
    ("empty.json", "[]", "holds no records"),
    ("scalar.json", "[3]", r"scalar.json\[0\] must be a dict"),
    ("nofields.jsonl", json.dumps({"context": "1. A fact."}) + "\n", "lacks field"),
    ("badquestions.json", json.dumps({"context": "1. A fact.", "questions": 3, "answers": []}),
     "questions must be a list"),
    ("badanswers.json", json.dumps({"context": "1. A fact.", "questions": ["q"], "answers": [7]}),
     r"answers\[0\] must be a string"),
    ("badmeta.json", json.dumps({"context": "1. A fact.", "questions": [], "answers": [], "metadata": [1]}),
     "metadata must be a dict"),
])
def test_malformed_data_files_raise_data_format_error(tmp_path, name, text, where):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match=where):
        load_records(path)
    with pytest.raises(DataFormatError, match=where):
        gym.make(FACTS, data_path=path)


def test_malformed_records_raise_data_format_error(tmp_path, record):
    with pytest.raises(DataFormatError, match="questions but"):
        write_records([dict(record, answers=record["answers"][:-1])], tmp_path / "x.json")
    with pytest.raises(DataFormatError, match="qa_pair_ids"):
        validate_record(dict(record, metadata={"qa_pair_ids": ["only-one"]}))
    with pytest.raises(DataFormatError, match="no numbered facts"):
        parse_context("no numbered lines here")


def test_parquet_without_pyarrow_raises_dependency_not_installed(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # makes `import pyarrow` fail
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    path = tmp_path / "facts.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(DependencyNotInstalled, match="needs pyarrow: pip install"):
        load_records(path)


def _library_modules():
    import importlib
    import pkgutil

    import tepa_envs.agents
    import tepa_envs.wrappers

    for package in (tepa_envs, tepa_envs.agents, tepa_envs.wrappers):
        for found in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not found.name.endswith("__main__"):
                yield importlib.import_module(found.name)


def test_every_exception_class_of_the_library_derives_from_the_root_error():
    """A caller can catch every error the library raises with ``except TepaError`` (each also
    keeps the built-in error it refines); private control-flow signals are exempt."""
    classes = {obj for module in _library_modules() for obj in vars(module).values()
               if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__}
    assert len(classes) >= 15, "the enumeration found too few exception classes to mean anything"
    stray = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes
                   if not issubclass(c, TepaError) and not c.__name__.startswith("_"))
    assert not stray, stray


def test_a_missing_ray_is_the_one_missing_dependency_error(monkeypatch):
    from tepa_envs.agents.evaluation.engine import backends

    monkeypatch.setattr(backends, "ray_available", lambda: False)
    with pytest.raises(DependencyNotInstalled, match=r'pip install "tepa-envs\[ray\]"') as caught:
        backends.make_backend("ray", 2)
    assert isinstance(caught.value, backends.BackendError)  # the CLI's one-line exit still applies


def test_a_missing_model_runtime_is_the_one_missing_dependency_error():
    from tepa_envs.agents.readers.lm_base import LMReaderError
    from tepa_envs.agents.readers.local_lm import ModelNotInstalled

    assert issubclass(ModelNotInstalled, DependencyNotInstalled) and issubclass(ModelNotInstalled, LMReaderError)
    assert issubclass(ModelNotInstalled, TepaError)
