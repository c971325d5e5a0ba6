"""Bad command-line input is refused before any work, in one line with exit status 2."""

import pytest

import tepa_envs.agents.evaluation.cli.commands as commands
from tepa_envs.agents.evaluation.cli import MAX_SEEDS, build_parser, main
from tepa_envs.agents.evaluation.engine.evaluate import evaluate
from tepa_envs.agents.evaluation.engine.jobs import MethodSpec
from tepa_envs.agents.evaluation.engine.validate import validate_methods
from tepa_envs.agents.memories.tepa import TEPA


def no_work(*args, **kwargs):
    raise AssertionError("the evaluation started")


@pytest.mark.parametrize("args, needle", [
    (["run", "CartPole-v1", "--methods", "tepa"], "tepa_envs.core.contracts.TaskEnv"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "tepa", "--seeds", "100000000000"], "--seeds"),
    (["reproduce", "controlled", "--seeds", str(MAX_SEEDS + 1)], "--seeds"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "builtins:input"], "not a class"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "sys:exit"], "not a class"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "tepa_envs.core:validate_evidence"], "a function, not a class"),
    (["run", "TEPA/RegimeDrift-v0", "--methods", "tepa_envs.core.types:Evidence"], "not a memory class"),
])
def test_bad_input_is_one_line_exit_2_before_any_work(monkeypatch, capsys, args, needle):
    monkeypatch.setattr(commands, "evaluate_through_store", no_work)
    monkeypatch.setattr(commands, "reproduce_setting", no_work)
    monkeypatch.setattr(commands, "reproduce_all", no_work)
    assert main(args) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.startswith("tepa-bench: error:") and needle in err and "\n" not in err
    assert captured.out == ""


def test_seeds_cap_is_in_the_help():
    for command in ("run", "reproduce"):
        sub = build_parser()._subparsers._group_actions[0].choices[command]
        assert f"{MAX_SEEDS:,}" in sub.format_help().replace("\n", " ")


def test_a_class_object_as_a_method_is_a_clear_type_error():
    with pytest.raises(TypeError, match=r"got the class TEPA — pass 'tepa_envs\.agents\.memories\.tepa:TEPA'"):
        validate_methods("TEPA/RegimeDrift-v0", {}, [TEPA])
    with pytest.raises(TypeError, match="names, import paths or MethodSpec"):
        evaluate("TEPA/RegimeDrift-v0", ["tepa", TEPA], range(1))
    with pytest.raises(TypeError, match="names, import paths or MethodSpec"):
        evaluate("TEPA/RegimeDrift-v0", [TEPA()], range(1))
    validate_methods("TEPA/RegimeDrift-v0", {}, ["tepa", MethodSpec("t2", "tepa", {})])


def test_an_env_without_the_task_contract_is_refused_by_validate_methods():
    with pytest.raises(TypeError, match="CartPole-v1 cannot be evaluated.*TaskEnv"):
        validate_methods("CartPole-v1", {}, ["tepa"])
