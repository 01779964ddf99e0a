"""A local HTTP server speaking the OpenAI chat-completions wire format, for tests of the `openai` labeler.

Started on 127.0.0.1 with an ephemeral port (`with OpenAIStub() as stub: stub.base_url`). It is scriptable:

- `stub.script(*actions)` queues actions answered in arrival order (any prompt);
- `stub.on("needle", *actions)` queues actions for requests whose user message contains `needle` (checked
  first, so concurrent tests can script each prompt);
- otherwise `stub.default(request) -> Action` answers (by default `valid(2)`).

It speaks the labeler's two-step protocol (models/labeling/llm_prompt.py): `step_of(body)` tells a step-1
request (work + occupations; schema property `occupations`) from a step-2 one (tasks of the chosen
occupations); `offered_occupations` / `offered_tasks` read what a request offers (its schema enum, or the
list lines when no schema is sent). A rule's or the queue's actions are consumed one per request, whatever
the step, so `stub.on("needle", not_work())` answers step 1 and `stub.on("needle", valid(), invalid_json())`
breaks step 2.

Actions: `Reply(content | callable, usage, finish_reason, cached, refusal)`, `Status(code, message, headers)`,
`Raw(body, content_type)` (a 200 that is no chat completion, e.g. a proxy's HTML page),
`Slow(seconds, then)` (sleep before answering: the client's timeout fires first), `Drip(every, length)` (a 200
whose body comes a byte at a time: no single read times out), plus helpers
`valid(n, occupations)` (step 1: work + the first offered occupations; step 2: the first n offered tasks),
`answer(occupations, tasks, work)`, `not_work()`, `unknown_id(id)` (an ID never offered, at either step),
`invalid_json()`, `empty()`, `rate_limited(retry_after)`, `server_error()`. Usage reports
`prompt_tokens_details.cached_tokens`: by default the length of the longest message prefix (in chars/4)
shared with an earlier request, like a provider's prefix cache.

`echo_key=True` behaves like a careless proxy: every error message and every step-1 `reading` quotes the API
key of the request's Authorization header (`Incorrect API key provided: sk-...`), so tests can check that no
server text reaches a table, file or log unmasked; an error message also quotes it without its `sk-`,
upper-cased and spaced out (`echo_forms`). A batch's requests echo it too. With `escape_echo=True` the
echoed key is never in the text literally but as JSON \\uXXXX escapes: inside the answer's JSON (a chat answer's
`reading`), or in the result file's JSON (a batch), so only masking after decoding finds it.

`dialect="llama.cpp"` answers response_format {"type": "json_schema"} with HTTP 500 as llama.cpp does and
accepts {"type": "json_object", "schema": ...}. Every request is recorded in `stub.requests` (path, headers,
JSON body, time). Files and batches (`/v1/files`, `/v1/batches`) are emulated: a batch is processed at once
with the same actions, its output file holds one result line per request; `stub.drips["GET /files/[^/]+/content$"]
= Drip()` answers the calls of that method whose path matches the regex a byte at a time.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | Callable[[dict], str] | None
    usage: tuple[int, int] | None = None  # (prompt_tokens, completion_tokens); default: chars/4
    finish_reason: str = "stop"
    cached: int | None = None  # prompt_tokens_details.cached_tokens; default: the shared-prefix estimate
    refusal: str | None = None  # message.refusal (OpenAI's structured outputs refusing; content then None)


@dataclass
class Raw:
    """An HTTP 200 whose body is not a chat completion: `body` sent as is with `content_type`."""

    body: str
    content_type: str = "application/json"


@dataclass
class Status:
    code: int
    message: str = "error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Slow:
    seconds: float
    then: Any = None  # an action answered after the delay; default: the stub's default


@dataclass
class Drip:
    """An HTTP 200 that never ends: headers promising `length` bytes, then one byte every `every` seconds (each
    wait shorter than the client's read timeout) until the client hangs up or the stub stops."""

    every: float = 0.2
    length: int = 1_000_000


Action = Reply | Status | Slow | Raw | Drip


def schema_of(body: dict) -> dict | None:
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return (rf.get("json_schema") or {}).get("schema")
    return rf.get("schema")


def step_of(body: dict) -> int:
    """1 (occupations) or 2 (tasks) of the labeler's two-step protocol: from the schema, else the messages."""
    schema = schema_of(body)
    if schema:
        return 1 if "occupations" in schema.get("properties", {}) else 2
    users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
    return 2 if any(u.startswith("Step 2.") for u in users) else 1


def offered_occupations(body: dict) -> list[int]:
    """Step 1: the occupation numbers offered (schema enum, else the 'number title' lines)."""
    schema = schema_of(body)
    if schema and "occupations" in schema.get("properties", {}):
        return list(schema["properties"]["occupations"]["items"]["enum"])
    system = body["messages"][0]["content"].split("Occupation list", 1)[-1]
    return [int(m) for m in re.findall(r"^(\d+) \S", system, re.MULTILINE)]


def offered_tasks(body: dict) -> list[int]:
    """Step 2: the task IDs offered (schema enum, else the 'task_id | statement' lines of the last message)."""
    schema = schema_of(body)
    if schema and "tasks" in schema.get("properties", {}):
        return list(schema["properties"]["tasks"]["items"]["enum"])
    users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
    step2 = next((u for u in users if u.startswith("Step 2.")), "")
    return [int(m) for m in re.findall(r"^(\d+) \| ", step2, re.MULTILINE)]


def candidate_ids(body: dict) -> list[int]:
    """The IDs a request offers: occupation numbers at step 1, task IDs at step 2."""
    return offered_occupations(body) if step_of(body) == 1 else offered_tasks(body)


def user_text(body: dict) -> str:
    return "\n".join(m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user")


def answer(occupations: list[int] | None = None, tasks: list[int] | None = None, *, work: str = "yes",
           reading: str = "The prompt asks for this work.") -> Reply:
    """A scripted answer to whichever step is asked: step 1 gets work + `occupations` (default: the first
    offered), step 2 gets `tasks` (default: the first two offered)."""

    def content(body: dict) -> str:
        if step_of(body) == 1:
            occ = occupations if occupations is not None else offered_occupations(body)[:1]
            return json.dumps({"reading": reading, "work": work, "occupations": occ if work == "yes" else []})
        return json.dumps({"tasks": tasks if tasks is not None else offered_tasks(body)[:2]})

    return Reply(content)


def valid(n: int = 2, occupations: int = 1) -> Reply:
    """Step 1: work, the first `occupations` offered; step 2: the first `n` offered tasks."""

    def content(body: dict) -> str:
        if step_of(body) == 1:
            return json.dumps({"reading": "The prompt asks for this work.", "work": "yes",
                               "occupations": offered_occupations(body)[:occupations]})
        return json.dumps({"tasks": offered_tasks(body)[:n]})

    return Reply(content)


def not_work(reading: str = "A personal errand, not paid work.") -> Reply:
    return Reply(json.dumps({"reading": reading, "work": "no", "occupations": []}))


def unknown_id(task_id: int = 99_999_999) -> Reply:
    """An ID that was never offered: an occupation number at step 1, a task ID at step 2."""

    def content(body: dict) -> str:
        if step_of(body) == 1:
            return json.dumps({"reading": "made up", "work": "yes", "occupations": [task_id]})
        return json.dumps({"tasks": [task_id]})

    return Reply(content)


def invalid_json() -> Reply:
    return Reply('{"tasks": [1, 2')


def empty() -> Reply:
    return Reply("")


def rate_limited(retry_after: float | None = None) -> Status:
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Status(429, "Rate limit reached for requests", headers)


def server_error(message: str = "The server had an error while processing your request.") -> Status:
    return Status(500, message)


LLAMA_CPP_JSON_SCHEMA_ERROR = (
    "1 validation error for CreateChatCompletionRequest response_format.type "
    "Input should be 'text' or 'json_object' [type=literal_error, "
    "input_value='json_schema']"
)


class OpenAIStub:
    def __init__(self, dialect: str = "openai", default: Callable[[dict], Action] | None = None, *,
                 echo_key: bool = False, escape_echo: bool = False) -> None:
        self.dialect = dialect
        self.echo_key = echo_key
        self.escape_echo = escape_echo
        self.default = default or (lambda body: valid(2))
        self.requests: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}
        self.files_status: Status | None = None  # set: POST /files answers this status instead of uploading
        self.file_purposes: dict[str, str | None] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        # `"GET /files/[^/]+/content$"` (method, space, a regex searched in the path) -> a Drip answering it
        self.drips: dict[str, Drip] = {}
        self._queue: deque[Action] = deque()
        self._rules: list[tuple[str, deque[Action]]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._seen_prompts: list[str] = []
        self.pending_polls = 0  # GET /batches/{id} answers 'in_progress' this many times first
        self.batch_id_prefix = "batch_"  # a hostile server's ids may quote the key
        self.in_flight = 0
        self.max_in_flight = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # ends the Drip answers still sending

    # -- lifecycle
    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> OpenAIStub:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                stub._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                stub._handle(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="openai-stub")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting
    def script(self, *actions: Action) -> OpenAIStub:
        with self._lock:
            self._queue.extend(actions)
        return self

    def on(self, needle: str, *actions: Action) -> OpenAIStub:
        with self._lock:
            self._rules.append((needle, deque(actions)))
        return self

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    def _next_action(self, body: dict) -> Action:
        text = user_text(body)
        with self._lock:
            for needle, actions in self._rules:
                if actions and needle in text:
                    return actions.popleft()
            if self._queue:
                return self._queue.popleft()
        return self.default(body)

    # -- HTTP
    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        path = h.path.split("?")[0]
        record: dict[str, Any] = {
            "method": method,
            "path": path,
            "headers": {k.lower(): v for k, v in h.headers.items()},
            "time": time.time(),
            "body": None,
        }
        if raw and (h.headers.get("Content-Type") or "").startswith("application/json"):
            record["body"] = json.loads(raw)
        with self._lock:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        # The request stops counting as in flight once its answer is ready, before it is written: the client
        # sends its next request as soon as it has read this answer, possibly before this handler thread
        # returns, so counting until after the write over-counts the client's concurrency by one at random.
        try:
            response = self._answer(h, method, path, raw, record["body"])
        finally:
            with self._lock:
                self.in_flight -= 1
        try:
            if isinstance(response, bytes):
                self._send_raw(h, 200, response, "application/octet-stream")
            elif isinstance(response[1], Drip):
                self._drip(h, response[1])
            elif isinstance(response[1], Raw):
                self._send_raw(h, response[0], response[1].body.encode(), response[1].content_type)
            else:
                self._send_json(h, *response)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)

    def _answer(self, h: BaseHTTPRequestHandler, method: str, path: str, raw: bytes,
                body: Any) -> bytes | tuple[int, Any, dict[str, str]]:
        for route, drip in list(self.drips.items()):  # a Files / Batches call answered a byte at a time
            wanted, pattern = route.split(" ", 1)
            if method == wanted and re.search(pattern, path):
                return 200, drip, {}
        if method == "POST" and path.endswith("/chat/completions"):
            return self._chat(body, h.headers.get("Authorization") or "")
        if method == "POST" and path.endswith("/files"):
            if self.files_status is not None:  # the Files endpoint refuses (a careless proxy quotes the key)
                key = (h.headers.get("Authorization") or "").removeprefix("Bearer ").strip() if self.echo_key else ""
                message = self.files_status.message + (f" (Incorrect API key provided: {key})" if key else "")
                return self.files_status.code, _err(message, self.files_status.code), {}
            return self._upload(h, raw)
        if method == "GET" and re.search(r"/files/[^/]+/content$", path):
            return self.files.get(path.split("/")[-2], b"")
        if method == "POST" and path.endswith("/batches"):
            return self._create_batch(body, h.headers.get("Authorization") or "")
        if method == "GET" and re.search(r"/batches/[^/]+$", path):
            batch = self.batches.get(path.split("/")[-1])
            if batch and self.pending_polls > 0:
                self.pending_polls -= 1
                batch = {**batch, "status": "in_progress", "output_file_id": None, "error_file_id": None}
            return (200, batch, {}) if batch else (404, _err("no such batch", 404), {})
        return 404, _err(f"unknown route {method} {path}", 404), {}

    def _drip(self, h: BaseHTTPRequestHandler, drip: Drip) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(drip.length))
        h.end_headers()
        for _ in range(drip.length):
            if self._stopping.is_set():
                break
            h.wfile.write(b" ")
            h.wfile.flush()
            self._stopping.wait(drip.every)

    def _send_json(self, h: BaseHTTPRequestHandler, code: int, payload: Any, headers: dict[str, str]) -> None:
        self._send_raw(h, code, json.dumps(payload).encode(), "application/json", headers)

    @staticmethod
    def _send_raw(
        h: BaseHTTPRequestHandler, code: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
        h.wfile.flush()

    def _chat(self, body: dict, authorization: str = "", escape_inner: bool | None = None
              ) -> tuple[int, Any, dict[str, str]]:
        rf_type = (body.get("response_format") or {}).get("type")
        key = authorization.removeprefix("Bearer ").strip() if self.echo_key else ""
        if self.dialect == "llama.cpp" and rf_type == "json_schema":
            return 500, _err(LLAMA_CPP_JSON_SCHEMA_ERROR, 500), {}
        action = self._next_action(body)
        while isinstance(action, Slow):
            time.sleep(action.seconds)
            action = action.then if action.then is not None else self.default(body)
        if isinstance(action, Raw | Drip):
            return 200, action, {}
        if isinstance(action, Status):
            message = f"{action.message} (Incorrect API key provided: {key}; {authorization}){echo_forms(key)}" \
                if key else action.message
            return action.code, _err(message, action.code), action.headers
        completion = self._completion(body, action)
        if key:
            completion = _echo_in_reading(completion, key, self.escape_echo if escape_inner is None else escape_inner)
        return 200, completion, {}

    def _completion(self, body: dict, reply: Reply) -> dict[str, Any]:
        content = reply.content(body) if callable(reply.content) else reply.content
        text = "".join(f"<{m.get('role')}>{m.get('content') or ''}" for m in body.get("messages", []))
        if reply.usage is not None:
            tin, tout = reply.usage
        else:
            chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
            tin, tout = -(-chars // 4), -(-len(content or "") // 4)
        cached = reply.cached if reply.cached is not None else self._cached_tokens(text)
        cached = min(cached, tin)
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": reply.finish_reason,
                    "message": {"role": "assistant", "content": content, "refusal": reply.refusal},
                }
            ],
            "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout,
                      "prompt_tokens_details": {"cached_tokens": cached}},
        }

    def _cached_tokens(self, text: str) -> int:
        """Like OpenAI's prefix cache: the longest prefix shared with an earlier request, counted only from
        1,024 tokens (chars/4) on and in 128-token steps."""
        with self._lock:
            best = max((len(os.path.commonprefix([text, seen])) for seen in self._seen_prompts), default=0)
            self._seen_prompts.append(text)
        tokens = best // 4
        return 0 if tokens < 1024 else tokens - tokens % 128

    # -- files and batches
    def _upload(self, h: BaseHTTPRequestHandler, raw: bytes) -> tuple[int, Any, dict[str, str]]:
        ctype = h.headers.get("Content-Type", "")
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {ctype}\r\n\r\n".encode() + raw
        )
        purpose, data, filename = None, b"", "upload.jsonl"
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "purpose":
                purpose = part.get_content().strip()
            elif name == "file":
                data = part.get_payload(decode=True) or b""
                filename = part.get_filename() or filename
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = data
        self.file_purposes[file_id] = purpose
        return (
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": filename,
                "purpose": purpose or "batch",
                "status": "processed",
            },
            {},
        )

    def _create_batch(self, body: dict, authorization: str = "") -> tuple[int, Any, dict[str, str]]:
        input_id = body["input_file_id"]
        lines = [json.loads(x) for x in self.files[input_id].decode().split("\n") if x.strip()]
        out, errs = [], []
        key = authorization.removeprefix("Bearer ").strip() if self.echo_key else ""
        for i, line in enumerate(lines):
            code, payload, _ = self._chat(line["body"], authorization, escape_inner=False)
            response = {"status_code": code, "request_id": f"req_{i}", "body": payload}
            result = {
                "id": f"batch_req_{i}",
                "custom_id": line["custom_id"],
                "response": response,
                "error": None,
            }
            (out if code == 200 else errs).append(json.dumps(result))
        out_id, err_id = f"file-{next(self._ids)}", f"file-{next(self._ids)}" if errs else None

        def file_text(results: list[str]) -> bytes:
            text = "\n".join(results) + "\n"
            return (text.replace(key, json_escaped(key)) if key and self.escape_echo else text).encode()

        self.files[out_id] = file_text(out)
        if err_id:
            self.files[err_id] = file_text(errs)
        batch_id = f"{self.batch_id_prefix}{next(self._ids)}"
        now = int(time.time())
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "errors": None,
            "input_file_id": input_id,
            "completion_window": body["completion_window"],
            "status": "completed",
            "output_file_id": out_id,
            "error_file_id": err_id,
            "created_at": now,
            "completed_at": now,
            "request_counts": {"total": len(lines), "completed": len(out), "failed": len(errs)},
            "metadata": body.get("metadata"),
        }
        return 200, self.batches[batch_id], {}


def echo_forms(key: str) -> str:
    """The other forms an audit's careless server echoed a key in (2026-12-07): without its `sk-`, upper-cased,
    spaced out."""
    return f" [raw {key.removeprefix('sk-')}; {key.upper()}; {' '.join(key)}]"


def json_escaped(text: str) -> str:
    """`text` as JSON \\uXXXX escapes: not one of its characters literally."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


def _echo_in_reading(completion: dict[str, Any], key: str, escaped: bool = False) -> dict[str, Any]:
    """A step-1 answer whose `reading` quotes the key (the reading becomes every label's rationale); `escaped`:
    as \\uXXXX escapes in the answer's JSON text."""
    message = completion["choices"][0]["message"]
    try:
        answer = json.loads(message["content"] or "")
    except (TypeError, ValueError):  # no JSON text (a refusal, content sent as an object)
        return completion
    if isinstance(answer, dict) and "reading" in answer:
        answer["reading"] = f"{answer['reading']} [served with key {key}]"
        message["content"] = json.dumps(answer)
        if escaped:
            message["content"] = message["content"].replace(key, json_escaped(key))
    return completion


def _err(message: str, code: int) -> dict[str, Any]:
    fallback = "server_error" if code >= 500 else "invalid_request_error"
    kind = {429: "rate_limit_exceeded", 404: "not_found"}.get(code, fallback)
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}
