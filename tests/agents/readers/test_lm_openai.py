"""OpenAIReader against an OpenAI-compatible server the test starts on 127.0.0.1.

The server answers from a script of steps (an answer, an HTTP error, a stall), so
every failure mode is exercised for real over HTTP; it never reaches another host.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym
import pytest

import tepa_envs  # noqa: F401
from tepa_envs.agents import MemoryAgent, run_episode
from tepa_envs.agents.readers.lm_base import BudgetExhausted, EndpointError, InvalidAnswer
from tepa_envs.agents.readers.lm_cache import DecisionCache
from tepa_envs.agents.readers.openai_reader import OpenAIReader, match_option, reset_budgets
from tepa_envs.agents.readers.prompt import render_prompt
from tepa_envs.core import LifecycleState, Record


class Endpoint:
    """A chat-completions server: each request takes the next scripted step, or the default."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.script: list[tuple] = []
        self.default = ("follow",)
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # else each small response waits ~40 ms for the client's ACK

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
                step = endpoint.script.pop(0) if endpoint.script else endpoint.default
                if step[0] == "stall":
                    time.sleep(step[1])
                    return self._send(200, endpoint.answer(body, None))
                if step[0] == "status":
                    return self._send(step[1], {"error": {"message": step[2]}})
                return self._send(200, endpoint.answer(body, step[1] if len(step) > 1 else None))

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @staticmethod
    def answer(body: dict, text: str | None) -> dict:
        """Deterministic: the first option the user message's memory names, else the first option."""
        if text is None:
            user = body["messages"][-1]["content"]
            options = body["response_format"]["json_schema"]["schema"]["properties"]["choice"]["enum"] \
                if "response_format" in body else user.split("Options: ")[1].split("\n")[0].split(", ")
            shown = [line.split(". ", 1)[1].split(" (")[0] for line in user.splitlines() if line[:1].isdigit()]
            pick = next((v for v in shown if v in options), options[0])
            text = json.dumps({"choice": pick}) if "response_format" in body else pick
        return {"choices": [{"message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    reset_budgets()
    server = Endpoint()
    yield server
    server.close()


TOOLS = ("tool_0", "tool_1", "tool_2")


def _records(value: str) -> list[Record]:
    return [Record("k", value, 4, 0, LifecycleState.ACTIVE, 0, 1, 0.83)]


def _reader(endpoint: Endpoint, **kwargs) -> OpenAIReader:
    kwargs.setdefault("cache", False)
    kwargs.setdefault("backoff", 0.01)
    return OpenAIReader("test-model", endpoint.base_url, **kwargs)


def test_a_decision_is_a_constrained_chat_completion(endpoint, monkeypatch):
    monkeypatch.setenv("TEPA_TEST_KEY", "sk-test")
    reader = _reader(endpoint, api_key_env="TEPA_TEST_KEY")
    assert reader.choose(_records("tool_2"), TOOLS) == "tool_2"
    request = endpoint.requests[-1]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    assert request["model"] == "test-model" and request["temperature"] == 0
    assert request["response_format"]["json_schema"]["schema"]["properties"]["choice"]["enum"] == list(TOOLS)
    assert [m["role"] for m in request["messages"]][0] == "system"
    assert request["messages"][-1]["content"] == render_prompt("", TOOLS, _records("tool_2")).user


def test_a_plain_text_answer_maps_to_its_option(endpoint):
    endpoint.script = [("answer", "The best option is tool_1.")]
    assert _reader(endpoint, constrain="none").choose([], TOOLS) == "tool_1"


def test_an_answer_naming_no_option_is_an_error_not_a_random_action(endpoint):
    endpoint.script = [("answer", '{"choice": "hammer"}')]
    with pytest.raises(InvalidAnswer, match="hammer"):
        _reader(endpoint).choose([], TOOLS)


def test_a_stalled_endpoint_times_out_with_a_clear_error(endpoint):
    endpoint.script = [("stall", 2.0)]
    started = time.perf_counter()
    with pytest.raises(EndpointError, match="no answer within 0.3 s"):
        _reader(endpoint, timeout=0.3, max_retries=0).choose([], TOOLS)
    assert time.perf_counter() - started < 1.8


def test_a_500_then_success_is_retried(endpoint):
    endpoint.script = [("status", 500, "overloaded"), ("status", 503, "busy")]
    reader = _reader(endpoint, max_retries=2)
    assert reader.choose(_records("tool_0"), TOOLS) == "tool_0"
    assert len(endpoint.requests) == 3


def test_retries_are_bounded_and_the_last_failure_is_named(endpoint):
    endpoint.script = [("status", 500, "overloaded")] * 3
    with pytest.raises(EndpointError, match=r"failed 2 times \(last: HTTP 500: overloaded\)"):
        _reader(endpoint, max_retries=1).choose([], TOOLS)
    assert len(endpoint.requests) == 2


def test_a_refused_request_is_not_retried(endpoint):
    endpoint.script = [("status", 401, "invalid api key")]
    with pytest.raises(EndpointError, match="refused the request .HTTP 401: invalid api key"):
        _reader(endpoint, max_retries=3).choose([], TOOLS)
    assert len(endpoint.requests) == 1


def test_an_exhausted_call_budget_is_a_clear_error(endpoint):
    reader = _reader(endpoint, max_calls=2)
    reader.choose([], TOOLS)
    reader.choose(_records("tool_1"), TOOLS)
    with pytest.raises(BudgetExhausted, match="budget of 2 calls is spent"):
        reader.choose(_records("tool_2"), TOOLS)
    assert len(endpoint.requests) == 2
    # every reader of the run (the harness builds one per episode) draws from the same budget
    with pytest.raises(BudgetExhausted):
        _reader(endpoint, max_calls=2).choose([], TOOLS)


def test_an_exhausted_token_budget_is_a_clear_error(endpoint):
    reader = _reader(endpoint, max_tokens=150)
    reader.choose([], TOOLS)
    reader.choose(_records("tool_1"), TOOLS)  # 100 tokens spent: still under 150
    with pytest.raises(BudgetExhausted, match="budget of 150 tokens is spent"):
        reader.choose(_records("tool_2"), TOOLS)


def test_a_budget_file_is_shared_between_readers(endpoint, tmp_path):
    path = str(tmp_path / "budget.sqlite")
    _reader(endpoint, max_calls=1, budget_file=path).choose([], TOOLS)
    reset_budgets()  # as in another process
    with pytest.raises(BudgetExhausted):
        _reader(endpoint, max_calls=1, budget_file=path).choose([], TOOLS)


def test_cache_hits_give_identical_decisions_without_calls(endpoint, tmp_path):
    cache = DecisionCache(tmp_path / "decisions.sqlite")
    env = gym.make("TEPA/RegimeDrift-v0", phase_lengths=(3, 3, 3, 3))
    first = _reader(endpoint, cache=cache)
    result = run_episode(env, MemoryAgent("tepa", first), seed=5)
    calls = len(endpoint.requests)
    assert calls == first.stats.model_calls > 0 and first.stats.decisions == 12
    endpoint.default = ("answer", '{"choice": "tool_0"}')  # a changed endpoint would show if it were asked
    again = _reader(endpoint, cache=DecisionCache(tmp_path / "decisions.sqlite"))
    rerun = run_episode(env, MemoryAgent("tepa", again), seed=5)
    assert len(endpoint.requests) == calls and again.stats.model_calls == 0
    assert again.stats.picks == first.stats.picks
    assert (rerun.success == result.success).all()


def test_bad_arguments_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="base_url"):
        OpenAIReader("m", "ftp://x")
    with pytest.raises(ValueError, match="timeout"):
        OpenAIReader("m", "http://127.0.0.1:9/v1", timeout=0)
    with pytest.raises(TypeError, match="max_calls"):
        OpenAIReader("m", "http://127.0.0.1:9/v1", max_calls=1.5)
    with pytest.raises(ValueError, match="constrain"):
        OpenAIReader("m", "http://127.0.0.1:9/v1", constrain="regex")


@pytest.mark.parametrize("answer, expected", [
    ("tool_1", "tool_1"), (" Tool_1. ", "tool_1"), ('"tool_2"', "tool_2"), ("I pick tool_0 here", "tool_0"),
    ("tool_0 or tool_1", None), ("hammer", None), ("", None),
])
def test_answers_map_to_one_option_or_none(answer, expected):
    assert match_option(answer, TOOLS) == expected


def test_an_option_inside_a_longer_one_does_not_make_the_answer_ambiguous():
    assert match_option("use csv:semicolon", ("csv", "csv:semicolon", "json")) == "csv:semicolon"
