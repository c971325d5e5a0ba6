"""Calibrating a reader profile: the simulated reader's own parameters are recovered
within their intervals; a real OpenAI-compatible server (loopback) and the packaged
model are measured through the same path as an episode."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tepa_envs.agents.readers.calibration import (
    CALIBRATION_SEEDS, KINDS, collect_decisions, calibrate, prompt_kind,
)
from tepa_envs.agents.readers.evidence_reader import EvidenceReader
from tepa_envs.agents.readers.local_lm import LocalLMReader, ModelNotInstalled, check_runtime, locate_model
from tepa_envs.agents.readers.openai_reader import OpenAIReader, reset_budgets
from tepa_envs.agents.readers.profile import PROBABILITIES, ReaderProfile
from tepa_envs.core import LifecycleState, Record

TRUE = ReaderProfile("truth", follow_plain=0.6, follow_validity=0.2, follow_conflict=0.9, stated_prob=0.3,
                     empty_explore_prob=0.25)


def record(value: str) -> Record:
    return Record("k", value, 1, 0, LifecycleState.ACTIVE, 0, 0, 0.5)


def test_prompt_kinds_follow_the_simulated_readers_precedence():
    choices = ["a", "b", "c"]
    assert prompt_kind([], choices, None, False) == "empty"
    assert prompt_kind([record("z")], choices, None, True) == "empty"  # nothing usable
    assert prompt_kind([record("a")], choices, None, False) == "plain"
    assert prompt_kind([record("a"), record("a")], choices, None, False) == "plain"
    assert prompt_kind([record("a"), record("b")], choices, None, False) == "conflict"
    assert prompt_kind([record("a"), record("b")], choices, None, True) == "validity"
    assert prompt_kind([record("a")], choices, "b", False) == "stated"
    assert prompt_kind([record("a")], choices, "a", False) is None
    assert prompt_kind([record("a")], [], None, False) is None


def test_decisions_are_recorded_from_held_out_episodes():
    decisions = collect_decisions(5)
    assert {kind: len(v) for kind, v in decisions.items()} == {kind: 5 for kind in KINDS}
    for kind, found in decisions.items():
        for decision in found:
            assert prompt_kind(decision.records, decision.choices, decision.stated, decision.validity) == kind
            assert decision.context
    assert CALIBRATION_SEEDS >= 100_000


def test_calibrating_the_simulated_reader_recovers_its_profile():
    """A reader with known parameters: every estimate's 95 % interval holds the truth."""
    measured, rows = calibrate(EvidenceReader(**TRUE.reader_kwargs()), 150, name="measured", source="test")
    assert len(rows) == 5 * 150 and {row["kind"] for row in rows} == set(KINDS)
    for name in PROBABILITIES:
        low, high = measured.intervals[name]
        assert low <= getattr(TRUE, name) <= high, (name, getattr(measured, name), (low, high))
        assert abs(getattr(measured, name) - getattr(TRUE, name)) < 0.12, name
    assert measured.counts["follow_plain"] == 150


class FollowingEndpoint:
    """A chat-completions server whose 'model' names the first option the memory shows,
    else the first option: a reader that always follows and never explores."""

    def __init__(self) -> None:
        endpoint = self
        self.calls = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.calls += 1
                user = body["messages"][-1]["content"]
                options = body["response_format"]["json_schema"]["schema"]["properties"]["choice"]["enum"]
                shown = [line.split(". ", 1)[1].split(" (")[0] for line in user.splitlines() if line[:1].isdigit()]
                pick = next((v for v in shown if v in options), options[0])
                data = json.dumps({"choices": [{"message": {"content": json.dumps({"choice": pick})}}],
                                   "usage": {"total_tokens": 10}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def test_calibrating_an_openai_compatible_endpoint(tmp_path):
    endpoint = FollowingEndpoint()
    reset_budgets()
    try:
        reader = OpenAIReader("follower", endpoint.base_url, cache=tmp_path / "d.sqlite", max_calls=None)
        profile, rows = calibrate(reader, 12, name="follower", source="loopback")
    finally:
        endpoint.server.shutdown()
    assert endpoint.calls == len({json.dumps(r, sort_keys=True) for r in rows}) or endpoint.calls <= len(rows)
    assert profile.follow_plain == profile.follow_validity == profile.follow_conflict == 1.0
    assert profile.stated_prob == 0.0  # it reads the memory, never the statement
    assert profile.empty_explore_prob == 0.0 and "position 0" in profile.source


def _model_missing() -> str:
    try:
        locate_model("smollm2-135m")
        check_runtime()
    except ModelNotInstalled as exc:
        return str(exc)
    return ""


@pytest.mark.skipif(bool(_model_missing()), reason=f"real-model reader not installed: {_model_missing()}")
def test_calibrating_the_packaged_model(tmp_path):
    profile, rows = calibrate(LocalLMReader(cache=tmp_path / "d.sqlite"), 2, name="smollm2", source="test")
    assert len(rows) == 10 and all(row["answer"] in row["options"] for row in rows)
    assert all(0.0 <= getattr(profile, name) <= 1.0 for name in PROBABILITIES)
