"""A total deadline for each request of the `openai` labeler, connect to last byte.

httpx2's timeouts (the SDK's `timeout`) bound each wait: the connect, one read, one write. A server that sends
a byte a little more often than that never times out: an audit's 200 with `Content-Length: 1000000` sending a
byte per second hung `label()` for ever. Neither the SDK nor httpx2 has a total timeout, so the labeler's HTTP
client (`bounded_http_client`) reads and writes through sockets that cap every wait at the time left before
the calling thread's deadline (`deadline(seconds)`, set around each chat request by resources/llm_client.py).
A request still going at its deadline raises httpx2's ReadTimeout (the SDK's APITimeoutError) wherever it is:
connecting, sending, waiting for the headers or reading the body. The Batch API's calls have theirs too
(resources/llm_batch.py: `batch_file_timeout_s` for a file, which may be large). Outside `deadline()` nothing
changes.

No dagster, no environment, no files.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import openai

_DEADLINE = threading.local()  # .at: time.monotonic() by which this thread's request must be done


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Requests made by this thread inside the block must be done within `seconds` of its start."""
    previous = getattr(_DEADLINE, "at", None)
    _DEADLINE.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _DEADLINE.at = previous


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """`timeout` (one wait's own bound) capped at the time left before this thread's deadline, if it has one."""
    at = getattr(_DEADLINE, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the request's total deadline passed")
    return left if timeout is None else min(timeout, left)


class _BoundedStream(httpcore2.NetworkStream):
    """A connection whose every read and write ends at the deadline of the thread using it."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        return _BoundedStream(self._inner.start_tls(ssl_context, server_hostname,
                                                    _left(timeout, httpcore2.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore2.NetworkBackend):
    """Opens `_BoundedStream`s (through a proxy too: the proxy's pool connects with the same backend)."""

    def __init__(self, inner: httpcore2.NetworkBackend) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        return _BoundedStream(self._inner.connect_tcp(host, port, _left(timeout, httpcore2.ConnectTimeout),
                                                      local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        return _BoundedStream(self._inner.connect_unix_socket(path, _left(timeout, httpcore2.ConnectTimeout),
                                                              socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bounded_http_client(*, trust_env: bool) -> openai.DefaultHttpxClient:
    """The SDK's default HTTP client (env proxies when `trust_env`), its connections bounded by `deadline()`.

    httpx2's transports take no network backend, so it is set on their connection pools (private attributes of
    the pinned httpx2/httpcore2, checked here: a version without them fails at once, never silently unbounded)."""
    client = openai.DefaultHttpxClient(trust_env=trust_env)
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if not isinstance(backend, httpcore2.NetworkBackend):
            client.close()
            raise RuntimeError(f"cannot bound the LLM client's requests: {type(transport).__name__} has no "
                               "httpcore2 connection pool with a network backend (httpx2 changed?)")
        pool._network_backend = _BoundedBackend(backend)  # type: ignore[union-attr]
    return client


__all__ = ["bounded_http_client", "deadline"]
