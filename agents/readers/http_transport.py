"""One HTTP(S) POST that a hostile endpoint cannot stretch, redirect or flood.

:class:`~tepa_envs.agents.readers.openai_reader.OpenAIReader` sends its requests
through :func:`post`, which uses the standard library's ``http.client`` directly
(no new dependency) because ``urllib`` does three things a reader holding an API
key must not: it follows redirects (sending the request, ``Authorization``
header included, wherever ``Location`` points), its timeout bounds each socket
read rather than the call (a server sending one byte a second holds it
indefinitely), and it reads a body whole, however large. Here:

* **No redirect is followed.** A 3xx response is returned as it is (status and
  headers, its body unread); nothing is ever sent to any host but the URL's.
* **One deadline per call.** ``timeout`` seconds cover connecting (every
  address the host resolves to), the TLS handshake, sending the request, and
  reading the status line, the headers and the body: every socket operation
  waits at most the time left, and :class:`DeadlineExceeded` is raised when
  none is. Only the name lookup is the system resolver's and is not bounded.
* **A size cap.** A ``Content-Length`` above ``max_bytes`` is refused before
  any of the body is read; a chunked or unannounced body is read in chunks and
  refused as soon as it passes ``max_bytes`` (:class:`ResponseTooLarge`). The
  cap applies to every body, error responses' included; headers are bounded by
  ``http.client`` (100 lines of 64 KiB).
* **Every failure is a** :class:`TransportError` whose ``transient`` says whether
  a retry may help: a refused or reset connection, a bad status line, a body
  shorter than its ``Content-Length`` and a missed deadline are transient; an
  oversized body, a rejected TLS certificate and a request that cannot be sent
  (an invalid header) are not.

HTTPS uses :func:`ssl.create_default_context` (certificates and host names
verified). Proxy variables (``HTTPS_PROXY``, ...) are not used: the request goes
straight to the URL's host.
"""

from __future__ import annotations

from tepa_envs.error import TepaError
import functools
import http.client
import io
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Mapping

CHUNK_BYTES = 65_536
"""The most one read of the body asks for."""


class TransportError(TepaError):
    """The exchange failed before a complete response was read; ``transient``: a retry may help."""

    def __init__(self, message: str, *, transient: bool = True) -> None:
        super().__init__(message)
        self.transient = transient


class DeadlineExceeded(TransportError):
    """The response was not complete within the call's ``timeout`` (transient)."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"the deadline of {timeout:g} s passed", transient=True)


class ResponseTooLarge(TransportError):
    """The body is larger than the cap (not transient: the server would send it again)."""

    def __init__(self, max_bytes: int, declared: int | None) -> None:
        said = f"a Content-Length of {declared} bytes" if declared is not None else "a body"
        super().__init__(f"{said} over the cap of {max_bytes} bytes", transient=False)
        self.max_bytes, self.declared = max_bytes, declared


@dataclass(frozen=True)
class Target:
    """Where a URL points: scheme, host, port and the request target (path and query)."""

    tls: bool
    host: str
    port: int
    path: str

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"


def split_url(url: str) -> Target:
    """The :class:`Target` of an ``http(s)`` URL (``ValueError`` for anything else, or credentials in it)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL with a host: {url!r}")
    if any(ch.isspace() or not ch.isprintable() for ch in parts.hostname):
        raise ValueError(f"the host of {url!r} holds spaces or control characters")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"credentials in the URL are not supported: {parts.scheme}://...@{parts.hostname}")
    port = parts.port or (443 if parts.scheme == "https" else 80)  # .port: ValueError when out of range
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(parts.scheme == "https", parts.hostname, port, path)


@dataclass(frozen=True)
class HttpResponse:
    """A complete response: ``headers`` keyed by lower-case name (the first of repeated ones)."""

    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes


@functools.lru_cache(maxsize=1)
def default_tls_context() -> ssl.SSLContext:
    """The verifying TLS context every HTTPS request shares (built once)."""
    return ssl.create_default_context()


def post(url: str, body: bytes, headers: Mapping[str, str], *, timeout: float, max_bytes: int,
         tls: ssl.SSLContext | None = None) -> HttpResponse:
    """POST ``body`` to ``url`` once (see the module docstring); raise :class:`TransportError` on failure."""
    try:
        target = split_url(url)
    except ValueError as exc:
        raise TransportError(str(exc), transient=False) from None
    deadline = time.monotonic() + timeout
    try:
        conn = _Connection(target, deadline, timeout, (tls or default_tls_context()) if target.tls else None)
    except (ValueError, http.client.HTTPException) as exc:
        raise TransportError(f"cannot address {url!r}: {exc}", transient=False) from None
    try:
        _send(conn, target, body, headers)
        return _receive(conn, max_bytes)
    except TimeoutError:
        raise DeadlineExceeded(timeout) from None
    except ssl.SSLCertVerificationError as exc:
        raise TransportError(f"TLS certificate rejected: {exc.verify_message}", transient=False) from None
    except (OSError, http.client.HTTPException, ValueError) as exc:  # ValueError: e.g. a bad chunk size
        raise TransportError(_describe(exc)) from None
    finally:
        conn.release()


def _send(conn: _Connection, target: Target, body: bytes, headers: Mapping[str, str]) -> None:
    try:
        conn.connect()
    except (TimeoutError, ssl.SSLCertVerificationError, TransportError):
        raise
    except OSError as exc:
        raise TransportError(f"cannot connect to {target.origin}: {exc}") from None
    try:
        conn.request("POST", target.path, body=body, headers=dict(headers))
    except (ValueError, http.client.HTTPException) as exc:  # an invalid header or path: ours, not the server's
        # the message leaves out the offending value: it may be the API key
        raise TransportError(f"cannot send the request ({type(exc).__name__}): a header or the path holds "
                             "characters HTTP does not allow", transient=False) from None


def _receive(conn: _Connection, max_bytes: int) -> HttpResponse:
    response = conn.getresponse()
    try:
        headers: dict[str, str] = {}
        for name, value in response.getheaders():
            headers.setdefault(name.lower(), value)
        redirect = 300 <= response.status < 400  # never followed, so its body is not read
        data = b"" if redirect else _read_body(response, max_bytes)
        return HttpResponse(response.status, response.reason, headers, data)
    finally:
        response.close()


def _read_body(response: http.client.HTTPResponse, max_bytes: int) -> bytes:
    declared = response.length  # None when chunked or delimited by the connection closing
    if declared is not None and declared > max_bytes:
        raise ResponseTooLarge(max_bytes, declared)
    data = bytearray()
    while True:
        chunk = response.read(min(CHUNK_BYTES, max_bytes + 1 - len(data)))
        if not chunk:
            break
        data += chunk
        if len(data) > max_bytes:
            raise ResponseTooLarge(max_bytes, None)
    if declared is not None and len(data) < declared:
        raise http.client.IncompleteRead(bytes(data), declared - len(data))
    return bytes(data)


def _describe(exc: BaseException) -> str:
    text = repr(exc) if isinstance(exc, http.client.IncompleteRead) else str(exc)  # its str is its repr
    text = " ".join(text[:400].split())[:200]  # a server's bytes (a status line) may hold line breaks
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _time_left(deadline: float, timeout: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded(timeout)
    return left


def _open_socket(host: str, port: int, deadline: float, timeout: float) -> socket.socket:
    """A TCP connection to the first of ``host``'s addresses that accepts, each try within the time left."""
    error: OSError | None = None
    for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        left = _time_left(deadline, timeout)
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(left)
            sock.connect(address)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error if error is not None else OSError(f"{host} resolves to no address")


class _Connection(http.client.HTTPConnection):
    """An ``HTTPConnection`` (TLS when given a context) whose socket keeps the call's deadline."""

    def __init__(self, target: Target, deadline: float, timeout: float, tls: ssl.SSLContext | None) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.default_port = 443 if tls is not None else 80  # the Host header omits the scheme's own port
        self._deadline, self._timeout, self._tls = deadline, timeout, tls
        self._raw: socket.socket | None = None

    def connect(self) -> None:
        self._raw = _open_socket(self.host, self.port, self._deadline, self._timeout)
        if self._tls is not None:
            self._raw.settimeout(_time_left(self._deadline, self._timeout))  # bounds the whole handshake
            self._raw = self._tls.wrap_socket(self._raw, server_hostname=self.host)
        self.sock = _DeadlineSocket(self._raw, self._deadline, self._timeout)

    def release(self) -> None:
        """Close the connection and its socket (``http.client`` only closes the wrapper)."""
        try:
            self.close()
        finally:
            if self._raw is not None:
                self._raw.close()
                self._raw = None


class _DeadlineSocket:
    """A socket as ``http.client`` uses it (``sendall``, ``makefile("rb")``, ``close``), every
    send and receive waiting at most the time left before the deadline."""

    def __init__(self, sock: socket.socket, deadline: float, timeout: float) -> None:
        self._sock, self._deadline, self._timeout = sock, deadline, timeout

    def _arm(self) -> None:
        self._sock.settimeout(_time_left(self._deadline, self._timeout))

    def sendall(self, data: bytes) -> None:
        self._arm()
        self._sock.sendall(data)

    def recv_into(self, buffer: memoryview) -> int:
        self._arm()
        return self._sock.recv_into(buffer)

    def makefile(self, mode: str = "rb", *args: object, **kwargs: object) -> io.BufferedReader:
        if mode != "rb":
            raise ValueError(f"only mode 'rb' is supported, got {mode!r}")
        return io.BufferedReader(_DeadlineReader(self))

    def close(self) -> None:
        """Nothing: ``http.client`` closes its socket when the response takes it over, and the
        response still reads from it; :meth:`_Connection.release` closes the real socket."""

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)


class _DeadlineReader(io.RawIOBase):
    """The raw stream under the response's buffered reader."""

    def __init__(self, sock: _DeadlineSocket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        return self._sock.recv_into(buffer)


__all__ = ["CHUNK_BYTES", "DeadlineExceeded", "HttpResponse", "ResponseTooLarge", "Target", "TransportError",
           "default_tls_context", "post", "split_url"]
