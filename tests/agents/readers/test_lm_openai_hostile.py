"""OpenAIReader against a hostile endpoint the test starts on 127.0.0.1.

The server speaks raw bytes over a socket, so it can do what a well-behaved HTTP
server never does: redirect the request (and its key) elsewhere, trickle the
response, send an endless or oversized body, a broken status line, a body cut
short, JSON nested 100 000 deep, or a ``usage`` that would lower the tokens spent.
Every scenario stays on the loopback interface.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import tracemalloc
from typing import Callable

import pytest

from tepa_envs.agents.readers.lm_base import EndpointError, InvalidAnswer
from tepa_envs.agents.readers.openai_reader import OpenAIReader, reset_budgets

TOOLS = ("tool_0", "tool_1", "tool_2")
MIB = 1 << 20
Behaviour = Callable[[socket.socket], None]


def _answer(content: str = '{"choice": "tool_0"}', usage: object = None) -> bytes:
    usage = {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100} if usage is None else usage
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}], "usage": usage}).encode()


def _head(status: str = "200 OK", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nConnection: close\r\n{extra}\r\n".encode()


def _response(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return _head(status, f"Content-Length: {len(body)}\r\n{extra}") + body


def good(conn: socket.socket) -> None:
    conn.sendall(_response(_answer()))


class Hostile:
    """Each connection: read one request, record it, then run the next scripted behaviour (or ``default``)."""

    def __init__(self, default: Behaviour = good) -> None:
        self.default = default
        self.script: list[Behaviour] = []
        self.requests: list[bytes] = []
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                self.requests.append(self._read_request(conn))
                (self.script.pop(0) if self.script else self.default)(conn)
            except OSError:  # the client gave up, as it should
                pass

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        while len(body) < length:
            body += conn.recv(65536)
        return head + b"\r\n\r\n" + body

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def server():
    reset_budgets()
    hostile = Hostile()
    yield hostile
    hostile.close()


@pytest.fixture
def collector():
    """A second origin that records whatever reaches it (nothing should)."""
    other = Hostile()
    yield other
    other.close()


def _reader(server: Hostile, **kwargs) -> OpenAIReader:
    kwargs.setdefault("cache", False)
    kwargs.setdefault("backoff", 0.01)
    kwargs.setdefault("timeout", 5.0)
    return OpenAIReader("test-model", server.base_url, **kwargs)


# ------------------------------------------------------------------------------ redirects
@pytest.mark.parametrize("status", ["302 Found", "307 Temporary Redirect"])
def test_a_redirect_is_refused_and_the_key_never_leaves_the_origin(server, collector, monkeypatch, status):
    monkeypatch.setenv("TEPA_TEST_KEY", "sk-secret")
    location = f"http://127.0.0.1:{collector.port}/collect"
    server.default = lambda conn: conn.sendall(_response(b"", status, f"Location: {location}\r\n"))
    with pytest.raises(EndpointError) as caught:
        _reader(server, api_key_env="TEPA_TEST_KEY", max_retries=3).choose([], TOOLS)
    message = str(caught.value)
    assert status.split()[0] in message and location in message and "never followed" in message
    assert len(server.requests) == 1  # not retried
    assert b"Bearer sk-secret" in server.requests[0]  # the configured origin did get the key
    time.sleep(0.1)
    assert collector.connections == 0 and collector.requests == []


# ------------------------------------------------------------------------------ the deadline
def _trickler(interval: float) -> Behaviour:
    def trickle_body(conn: socket.socket) -> None:
        conn.sendall(_head(extra="Content-Length: 1000\r\n"))
        for _ in range(12):  # then stops (the body cut short), so a reader without a deadline ends too
            conn.sendall(b" ")
            time.sleep(interval)
    return trickle_body


_trickle_body = _trickler(0.5)


def _trickle_headers(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Pad: ")
    for _ in range(12):
        conn.sendall(b"a")
        time.sleep(0.5)
    body = _answer()
    conn.sendall(f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)


@pytest.mark.parametrize("behaviour", [_trickle_body, _trickle_headers], ids=["body", "headers"])
def test_a_trickling_server_cannot_stretch_the_deadline(server, behaviour):
    server.default = behaviour
    started = time.perf_counter()
    with pytest.raises(EndpointError, match="no answer within 1 s"):
        _reader(server, timeout=1, max_retries=0).choose([], TOOLS)
    assert time.perf_counter() - started < 3.0


def test_a_missed_deadline_is_retried(server):
    server.script = [_trickler(0.2)]  # each byte well within the timeout: only a deadline ends it
    started = time.perf_counter()
    assert _reader(server, timeout=0.5, max_retries=1).choose([], TOOLS) == "tool_0"
    assert len(server.requests) == 2 and time.perf_counter() - started < 2.5


# ------------------------------------------------------------------------------ the size cap
PADDED = _answer()[:-1] + b" " * (5 * MIB) + b"}"  # a valid answer, 5 MiB long
SPACES = b" " * 65536


def _declared_too_large(conn: socket.socket) -> None:
    conn.sendall(_head(extra=f"Content-Length: {len(PADDED)}\r\n"))
    conn.sendall(PADDED)  # built once, outside the traced call


def _chunked_endless(conn: socket.socket) -> None:
    conn.sendall(_head(extra="Transfer-Encoding: chunked\r\n"))
    chunk = b"%x\r\n" % len(SPACES) + SPACES + b"\r\n"
    for _ in range(128):  # 8 MiB, then a valid end: a reader without a cap would take it all
        conn.sendall(chunk)
    body = _answer()
    conn.sendall(b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")


def _unannounced_endless(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
    for _ in range(128):
        conn.sendall(SPACES)
    conn.sendall(_answer())


@pytest.mark.parametrize("behaviour", [_declared_too_large, _chunked_endless, _unannounced_endless],
                         ids=["content-length", "chunked", "no-length"])
def test_an_oversized_body_is_refused_fast_with_bounded_memory(server, behaviour):
    server.default = behaviour
    reader = _reader(server, max_retries=2)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(EndpointError, match=f"over the cap of {MIB} bytes"):
            reader.choose([], TOOLS)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 2.0 and peak < 3 * MIB
    assert len(server.requests) == 1  # not retried: the server would send the same again


def test_an_oversized_error_body_is_refused_too(server):
    server.default = lambda conn: conn.sendall(_response(PADDED, "500 Internal Server Error"))
    with pytest.raises(EndpointError, match="over the cap"):
        _reader(server, max_retries=2).choose([], TOOLS)
    assert len(server.requests) == 1


def test_the_cap_is_an_argument():
    reader = OpenAIReader("m", "http://127.0.0.1:9/v1", cache=False)
    assert reader.max_response_bytes == MIB
    assert OpenAIReader("m", "http://127.0.0.1:9/v1", cache=False, max_response_bytes=10).max_response_bytes == 10
    for bad in (1.5, "1024", True):
        with pytest.raises(TypeError, match="max_response_bytes must be an int"):
            OpenAIReader("m", "http://127.0.0.1:9/v1", cache=False, max_response_bytes=bad)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="max_response_bytes must be > 0"):
            OpenAIReader("m", "http://127.0.0.1:9/v1", cache=False, max_response_bytes=bad)


# ------------------------------------------------------------------------------ broken replies
def _bad_status_line(conn: socket.socket) -> None:
    conn.sendall(b"HELLO THERE\r\n\r\n")


def _short_body(conn: socket.socket) -> None:
    conn.sendall(_head(extra="Content-Length: 500\r\n") + _answer()[:20])


def _deep_json(conn: socket.socket) -> None:
    conn.sendall(_response(b"[" * 100_000))


def _reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close


def _unavailable(conn: socket.socket) -> None:
    conn.sendall(_response(b'{"error": {"message": "busy"}}', "503 Service Unavailable"))


@pytest.mark.parametrize("behaviour", [_bad_status_line, _short_body, _deep_json],
                         ids=["bad-status-line", "short-body", "deep-json"])
def test_a_broken_reply_is_an_endpoint_error_after_the_retries(server, behaviour):
    server.default = behaviour
    with pytest.raises(EndpointError, match="failed 3 times"):
        _reader(server, max_retries=2).choose([], TOOLS)
    assert len(server.requests) == 3


def test_transient_failures_then_a_good_answer_succeed(server):
    server.script = [_bad_status_line, _short_body, _deep_json, _reset, _unavailable]
    assert _reader(server, max_retries=5).choose([], TOOLS) == "tool_0"
    assert len(server.requests) == 6


def test_a_deeply_nested_answer_is_an_invalid_answer(server):
    server.default = lambda conn: conn.sendall(_response(_answer(content="[" * 100_000)))
    with pytest.raises(InvalidAnswer, match="names none of the options"):
        _reader(server, max_retries=0).choose([], TOOLS)


# ------------------------------------------------------------------------------ usage and the budget
@pytest.mark.parametrize("usage, field", [
    ({"total_tokens": -1_000_000_000}, "usage.total_tokens"),
    ({"total_tokens": True}, "usage.total_tokens"),
    ({"prompt_tokens": -5, "completion_tokens": 1}, "usage.prompt_tokens"),
    ({"total_tokens": 2.5}, "usage.total_tokens"),
    ({"total_tokens": 10 ** 30}, "usage.total_tokens"),
])
def test_an_invalid_usage_is_refused_and_costs_nothing(server, usage, field):
    server.default = lambda conn: conn.sendall(_response(_answer(usage=usage)))
    reader = _reader(server, max_retries=2, max_tokens=1000)
    with pytest.raises(EndpointError, match=field.replace(".", r"\.")):
        reader.choose([], TOOLS)
    assert len(server.requests) == 1 and reader.budget.spent() == (1, 0)
    server.default = good  # a valid reply afterwards is counted as reported
    reader.choose([], TOOLS)
    assert reader.budget.spent() == (2, 100)
