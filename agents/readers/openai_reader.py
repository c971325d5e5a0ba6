"""``OpenAIReader``: any OpenAI-compatible chat-completions endpoint as the reader.

The reader sends the shared prompt (:mod:`~tepa_envs.agents.readers.prompt`) as a
system and a user message to ``{base_url}/chat/completions`` with temperature 0,
and maps the answer to one of the options:

* with ``constrain="json_schema"`` (default) the request asks for a JSON object
  ``{"choice": ...}`` whose value is restricted to the options (OpenAI's
  structured outputs; llama.cpp's server and vLLM accept the same field);
* the answer (the JSON's ``choice``, or the plain text with ``constrain="none"``)
  maps to the option it equals, ignoring case, surrounding quotes and
  punctuation; failing that, to the one option it mentions (the longest, when
  one option's name contains another's);
* an answer that maps to no option raises :class:`~tepa_envs.agents.readers.lm_base.InvalidAnswer`.

Failures are errors, never a random action: a connection error, a reset, a bad
status line, a body cut short, a missed deadline, a body that is not JSON, HTTP
408/409/429 or a 5xx answer is retried ``max_retries`` times, waiting
``backoff * 2**i`` seconds before retry ``i``; then, or at once on any other HTTP
error (a bad key, a bad request), :class:`~tepa_envs.agents.readers.lm_base.EndpointError`
names the endpoint, the status and the server's message. The budget
(``max_calls`` requests, ``max_tokens`` tokens as the endpoint reports them in
``usage``) is checked before every request; when it is spent,
:class:`~tepa_envs.agents.readers.lm_base.BudgetExhausted` is raised. Decisions come
from the shared cache first, and a cached decision costs nothing.

The endpoint is not trusted to behave (:mod:`~tepa_envs.agents.readers.http_transport`):

* **no redirect is followed**: a 3xx answer raises ``EndpointError`` naming the
  status and its ``Location``, at once; the request, and the API key in its
  ``Authorization`` header, go to the configured origin only;
* **one deadline per attempt**: ``timeout`` seconds cover connecting, the TLS
  handshake, sending, the status line, the headers and the whole body (a server
  trickling bytes cannot stretch it); a missed deadline is retried like a timeout;
* **a size cap**: a body over ``max_response_bytes`` (default 1 MiB; an answer is
  a few hundred bytes) is refused as soon as that is known, from its
  ``Content-Length`` or while reading, with ``EndpointError`` and without a retry
  (the server would send the same again);
* **the reply is checked**: a body that does not parse as JSON (nesting too deep
  included) is retried like the failures above; the ``usage`` token counts, when
  present, must be ints from 0 to ``2**53 - 1`` (not booleans), else
  ``EndpointError`` names the field at once and nothing is added to the budget
  (a server cannot lower the tokens spent).

The budget is per run: every ``OpenAIReader`` of one process with the same
endpoint, model and limits draws from one budget (the harness builds a reader
per episode); pass ``budget_file`` to share it between processes too (the
harness's ``--workers``), else each worker process has its own.

The HTTP client is the standard library's ``http.client``: one POST per decision
needs no third-party client, and the timeouts, retries and budget stay in this
module (the ``openai`` package would add its own retry loop and several
dependencies). ``urllib`` is not used because it follows redirects, bounds only
each socket read and reads bodies whole. HTTPS verifies certificates
(:func:`ssl.create_default_context`); proxy variables (``HTTPS_PROXY``) are not
used.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from tepa_envs.core import check_choice

from tepa_envs.agents.readers.http_transport import (
    DeadlineExceeded, HttpResponse, ResponseTooLarge, TransportError, post, split_url,
)
from tepa_envs.agents.readers.lm_base import (
    BudgetExhausted, EndpointError, InvalidAnswer, LMReader, LMReaderError,
)
from tepa_envs.agents.readers.lm_cache import CachedDecision, DecisionCache
from tepa_envs.agents.readers.prompt import Prompt

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CONSTRAINTS: tuple[str, ...] = ("json_schema", "none")
RETRY_STATUS = frozenset({408, 409, 429})
USAGE_FIELDS: tuple[str, ...] = ("total_tokens", "prompt_tokens", "completion_tokens")
MAX_REPORTED_TOKENS = 2 ** 53 - 1
"""The most tokens one ``usage`` count may report (JSON's exact integers; keeps the
budget file's 64-bit counters from overflowing)."""


def _positive(name: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> Any:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"{name} must be {'an int' if integer else 'a number'}, got {type(value).__name__}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return value


# ------------------------------------------------------------------------------ budget
class Budget:
    """Calls and tokens spent against limits, in this process or in a shared file."""

    def __init__(self, max_calls: int | None, max_tokens: int | None, path: str | None = None) -> None:
        self.max_calls, self.max_tokens, self.path = max_calls, max_tokens, path
        self.calls = self.tokens = 0
        self._lock = threading.Lock()
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            with self._db(path) as conn:
                conn.execute("CREATE TABLE IF NOT EXISTS spent (id INTEGER PRIMARY KEY CHECK (id = 0), "
                             "calls INTEGER NOT NULL, tokens INTEGER NOT NULL)")
                conn.execute("INSERT OR IGNORE INTO spent VALUES (0, 0, 0)")

    @staticmethod
    def _db(path: str) -> sqlite3.Connection:
        return sqlite3.connect(path, timeout=60.0, isolation_level="IMMEDIATE")

    def spent(self) -> tuple[int, int]:
        if self.path is None:
            return self.calls, self.tokens
        with self._db(self.path) as conn:
            calls, tokens = conn.execute("SELECT calls, tokens FROM spent").fetchone()
        return int(calls), int(tokens)

    def reserve_call(self) -> None:
        """Count one request, or raise :class:`BudgetExhausted` when a limit is reached."""
        with self._lock:
            if self.path is None:
                self._check(self.calls, self.tokens)
                self.calls += 1
                return
            conn = self._db(self.path)
            try:
                with conn:  # one IMMEDIATE transaction: check and count atomically across processes
                    calls, tokens = conn.execute("SELECT calls, tokens FROM spent").fetchone()
                    self._check(int(calls), int(tokens))
                    conn.execute("UPDATE spent SET calls = calls + 1")
            finally:
                conn.close()

    def add_tokens(self, n: int) -> None:
        with self._lock:
            if self.path is None:
                self.tokens += n
                return
            conn = self._db(self.path)
            try:
                with conn:
                    conn.execute("UPDATE spent SET tokens = tokens + ?", (n,))
            finally:
                conn.close()

    def _check(self, calls: int, tokens: int) -> None:
        if self.max_calls is not None and calls >= self.max_calls:
            raise BudgetExhausted(f"the reader's budget of {self.max_calls} calls is spent "
                                  f"({calls} calls, {tokens} tokens); raise max_calls or rerun with the cache")
        if self.max_tokens is not None and tokens >= self.max_tokens:
            raise BudgetExhausted(f"the reader's budget of {self.max_tokens} tokens is spent "
                                  f"({calls} calls, {tokens} tokens); raise max_tokens or rerun with the cache")


_BUDGETS: dict[tuple[Any, ...], Budget] = {}
_BUDGETS_LOCK = threading.Lock()


def shared_budget(key: tuple[Any, ...], max_calls: int | None, max_tokens: int | None,
                  path: str | None) -> Budget:
    """The one budget of this process for ``key`` (endpoint, model, limits, file)."""
    with _BUDGETS_LOCK:
        budget = _BUDGETS.get(key)
        if budget is None:
            budget = _BUDGETS[key] = Budget(max_calls, max_tokens, path)
        return budget


def reset_budgets() -> None:
    """Forget every in-process budget (a new run in the same process starts afresh)."""
    with _BUDGETS_LOCK:
        _BUDGETS.clear()


# ------------------------------------------------------------------------------ answers
def _normalize(text: str) -> str:
    return " ".join(text.strip().strip("\"'`.,;:!?()[]{}<>*").split()).casefold()


def match_option(answer: str, options: Sequence[str]) -> str | None:
    """The option ``answer`` names (see the module docstring), or ``None``."""
    said = _normalize(answer)
    for option in options:
        if _normalize(option) == said:
            return option
    mentioned = [o for o in options if _normalize(o) and _normalize(o) in said]
    if not mentioned:
        return None
    longest = max(len(_normalize(o)) for o in mentioned)
    best = [o for o in mentioned if len(_normalize(o)) == longest]
    if len(best) > 1:
        return None
    # an option mentioned only as part of a longer mentioned option does not count against it
    others = [o for o in mentioned if o != best[0] and _normalize(o) not in _normalize(best[0])]
    return None if others else best[0]


@dataclass(frozen=True)
class _Reply:
    text: str
    tokens: int


class OpenAIReader(LMReader):
    """A reader that asks an OpenAI-compatible endpoint (see the module docstring).

    Args:
        model: the model name the endpoint serves.
        base_url: the API root, e.g. ``http://127.0.0.1:8080/v1`` (default:
            ``$OPENAI_BASE_URL``, else OpenAI's).
        api_key_env: the environment variable holding the API key (default
            ``OPENAI_API_KEY``); an endpoint without keys needs none.
        timeout: seconds one attempt may take, from connecting to the last byte of
            the body (one wall-clock deadline, however slowly the server sends).
        max_retries: retries of a failed request (connection error, reset, bad
            status line, cut-short body, missed deadline, non-JSON body, 408, 409,
            429, 5xx).
        backoff: seconds before the first retry; doubled before each next one.
        max_calls: at most this many requests per run (``None``: no limit).
        max_tokens: at most this many tokens (prompt + completion, as reported) per
            run (``None``: no limit).
        answer_tokens: ``max_tokens`` of each completion.
        constrain: ``"json_schema"`` (the answer restricted to the options) or ``"none"``.
        seed: sent with every request (endpoints that honour it answer reproducibly).
        budget_file: a file holding the budget, shared by every process using it.
        cache: the decision cache (see :class:`~tepa_envs.agents.readers.lm_base.LMReader`).
        validity: ``"auto"`` or ``"hidden"`` (see :class:`~tepa_envs.agents.readers.lm_base.LMReader`).
        max_response_bytes: the largest response body read (default 1 MiB); a larger
            one raises :class:`~tepa_envs.agents.readers.lm_base.EndpointError` and is
            not retried, since a server that sent it once sends it again.

    No redirect is ever followed: a 3xx answer raises ``EndpointError`` and the
    request (with the key) goes to ``base_url``'s origin only.
    """

    def __init__(self, model: str, base_url: str | None = None, *, api_key_env: str = "OPENAI_API_KEY",
                 timeout: float = 30.0, max_retries: int = 3, backoff: float = 1.0,
                 max_calls: int | None = 1000, max_tokens: int | None = None, answer_tokens: int = 16,
                 constrain: str = "json_schema", seed: int = 0, budget_file: str | None = None,
                 cache: DecisionCache | str | bool | None = None, validity: str = "auto",
                 max_response_bytes: int = 1_048_576) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"model must be a non-empty str, got {model!r}")
        base_url = base_url if base_url is not None else os.environ.get("OPENAI_BASE_URL", DEFAULT_BASE_URL)
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        try:
            self.origin = split_url(base_url).origin
        except ValueError as exc:
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r} ({exc})") from None
        if not isinstance(api_key_env, str):
            raise TypeError(f"api_key_env must be a str, got {type(api_key_env).__name__}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout = float(_positive("timeout", timeout))
        self.max_retries = _positive("max_retries", max_retries, integer=True, allow_zero=True)
        self.backoff = float(_positive("backoff", backoff, allow_zero=True))
        self.max_calls = None if max_calls is None else _positive("max_calls", max_calls, integer=True)
        self.max_tokens = None if max_tokens is None else _positive("max_tokens", max_tokens, integer=True)
        self.answer_tokens = _positive("answer_tokens", answer_tokens, integer=True)
        self.max_response_bytes = _positive("max_response_bytes", max_response_bytes, integer=True)
        self.constrain = check_choice("constrain", constrain, CONSTRAINTS)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        self.seed = seed
        self.budget_file = None if budget_file is None else str(budget_file)
        super().__init__(cache=cache, validity=validity)
        self.model_id = (f"openai-compatible:{self.model}@{self.base_url}|constrain={self.constrain}"
                         f"|seed={self.seed}|answer_tokens={self.answer_tokens}")
        self.budget = shared_budget((self.base_url, self.model, self.max_calls, self.max_tokens, self.budget_file),
                                    self.max_calls, self.max_tokens, self.budget_file)

    # ---------------------------------------------------------------- one decision
    def _decide(self, prompt: Prompt) -> CachedDecision:
        reply = self._complete(prompt)
        answer = reply.text
        if self.constrain == "json_schema":
            try:
                parsed = json.loads(reply.text)
                if isinstance(parsed, dict) and isinstance(parsed.get("choice"), str):
                    answer = parsed["choice"]
            except (ValueError, RecursionError):
                pass  # a server that ignored response_format (or nested too deep): read the text
        choice = match_option(answer, prompt.options)
        if choice is None:
            raise InvalidAnswer(f"{self.model} at {self.base_url} answered {reply.text[:200]!r}, which names none "
                                f"of the options {list(prompt.options)}")
        return CachedDecision(choice, {"answer": reply.text, "tokens": reply.tokens})

    def _request_body(self, prompt: Prompt) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(prompt.messages), "temperature": 0,
                                "max_tokens": self.answer_tokens, "seed": self.seed}
        if self.constrain == "json_schema":
            body["max_tokens"] = self.answer_tokens + max(len(o) for o in prompt.options) + 16
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "choice", "strict": True,
                "schema": {"type": "object", "properties": {"choice": {"type": "string", "enum": list(prompt.options)}},
                           "required": ["choice"], "additionalProperties": False}}}
        return body

    def _complete(self, prompt: Prompt) -> _Reply:
        self.budget.reserve_call()
        data = json.dumps(self._request_body(prompt)).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            outcome = self._attempt(url, data, headers)
            if isinstance(outcome, _Reply):
                return outcome
            last = outcome
        raise EndpointError(f"{url} failed {self.max_retries + 1} times (last: {last})")

    def _attempt(self, url: str, data: bytes, headers: dict[str, str]) -> _Reply | str:
        """One request: the reply, or why it failed when a retry may help; :class:`EndpointError` when not."""
        try:
            response = post(url, data, headers, timeout=self.timeout, max_bytes=self.max_response_bytes)
        except DeadlineExceeded:
            return f"no answer within {self.timeout:g} s"
        except ResponseTooLarge as exc:
            raise EndpointError(f"{url} answered {exc} (max_response_bytes); not retried: "
                                "the server would send it again") from None
        except TransportError as exc:
            if exc.transient:
                return str(exc)
            raise EndpointError(f"{url} failed: {exc}") from None
        return self._answer(url, response)

    def _answer(self, url: str, response: HttpResponse) -> _Reply | str:
        """The reply in ``response``, or why a retry may help; :class:`EndpointError` when not."""
        status = response.status
        if 300 <= status < 400:
            location = response.headers.get("location", "")
            raise EndpointError(f"{url} answered HTTP {status} redirecting to {location[:300]!r}; "
                                f"redirects are never followed (requests go to {self.origin} only)")
        if not 200 <= status < 300:
            last = f"HTTP {status}: {_error_text(response.body, response.reason)}"
            if status in RETRY_STATUS or status >= 500:
                return last
            raise EndpointError(f"{url} refused the request ({last})")
        try:
            payload = _load_json(response.body)
        except ValueError as exc:
            return f"an invalid JSON reply ({exc}): {_preview(response.body)}"
        return self._reply(url, payload, response.body)

    def _reply(self, url: str, payload: Any, body: bytes) -> _Reply:
        try:
            text = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"{url} answered without choices[0].message.content: {_preview(body)}") from None
        if not isinstance(text, str):
            raise EndpointError(f"{url} answered a non-text message content: {_preview(body)}")
        tokens = _usage_tokens(url, payload.get("usage"))
        self.budget.add_tokens(tokens)
        return _Reply(text, tokens)

    def __repr__(self) -> str:
        return (f"OpenAIReader(model={self.model!r}, base_url={self.base_url!r}, constrain={self.constrain!r}, "
                f"max_calls={self.max_calls}, max_tokens={self.max_tokens})")


def _load_json(body: bytes) -> Any:
    """The JSON in ``body`` (``ValueError`` when it is not UTF-8 JSON, or nests too deep to parse)."""
    try:
        return json.loads(body.decode("utf-8"))
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _preview(body: bytes) -> str:
    """The start of a body, for a message (never the parsed value: its repr may nest too deep)."""
    text = body[:200].decode("utf-8", "replace")
    return repr(text) + ("..." if len(body) > 200 else "")


def _usage_tokens(url: str, usage: Any) -> int:
    """The tokens a reply's ``usage`` reports (0 without one); :class:`EndpointError` naming a bad field."""
    if usage is None:
        return 0
    if not isinstance(usage, dict):
        raise EndpointError(f"{url} answered an invalid usage (not an object): {type(usage).__name__}")
    counts: dict[str, int] = {}
    for name in USAGE_FIELDS:
        value = usage.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPORTED_TOKENS:
            shown = repr(value) if isinstance(value, (bool, int, float)) else type(value).__name__
            raise EndpointError(f"{url} answered an invalid usage.{name} ({shown[:40]}): token counts must be "
                                f"ints from 0 to {MAX_REPORTED_TOKENS}; nothing was added to the budget")
        counts[name] = value
    if "total_tokens" in counts:
        return counts["total_tokens"]
    return counts.get("prompt_tokens", 0) + counts.get("completion_tokens", 0)


def _error_text(body: bytes, reason: str) -> str:
    """The server's message in an error body (its ``error.message``, else its text), else the reason phrase."""
    text = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str):
        return message[:300]
    return " ".join(text[:2000].split())[:300] or " ".join(reason[:2000].split())[:300]


__all__ = ["Budget", "CONSTRAINTS", "DEFAULT_BASE_URL", "LMReaderError", "OpenAIReader", "match_option",
           "reset_budgets", "shared_budget"]
