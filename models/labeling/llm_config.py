"""The `openai` labeler's configuration: everything that shapes its requests (resources/llm_labeler.py).

Its own module so that what only needs the settings (resources/dagster_resources.py) does not import the openai
client. Pure: no network, no dagster, no environment; the API key is passed in and never shown by `repr`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.labeling.llm_prompt import OCCUPATION_LIST_MODES

RESPONSE_FORMATS = ("json_schema", "json_object", "auto")


@dataclass(frozen=True)
class LLMConfig:
    """Everything that shapes the requests. `api_key` is excluded from repr and never logged."""

    model: str = "gpt-4o-mini"
    base_url: str | None = None  # None = api.openai.com; e.g. http://127.0.0.1:8000/v1 for llama.cpp
    api_key: str | None = field(default=None, repr=False)
    occupation_list: str = "all"  # 'all': the 923 titles by major group (cached prefix) | 'ranked': top-k
    occupation_k: int = 40  # 'ranked': the offline ranking's top-k occupations
    max_labels: int = 10  # at most this many tasks per prompt (step-2 schema maxItems)
    max_concurrency: int = 4
    timeout_s: float = 60.0  # per request, connect to last byte (resources/llm_deadline.py)
    # Batch API: per file uploaded or downloaded, in total (a 200 MB file at ~110 KB/s); its polls: timeout_s
    batch_file_timeout_s: float = 1800.0
    max_retries: int = 4  # retries after the first attempt, per step
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0  # cap on a server's Retry-After
    response_format: str = "auto"  # 'json_schema' (OpenAI, vLLM) | 'json_object' (llama.cpp) | 'auto'
    temperature: float = 0.0
    seed: int | None = 0
    max_output_tokens: int = 400
    max_reading_chars: int = 160  # grammar-enforced in json_object mode; stored readings are clipped at 300
    max_prompt_chars: int = 6000  # the prompt is cut (head + tail) to this, as the reference judge saw it
    head_fraction: float = 0.7  # truncation keeps this share of the kept characters from the head

    def __post_init__(self) -> None:
        if self.response_format not in RESPONSE_FORMATS:
            raise ValueError(
                f"response_format must be one of {RESPONSE_FORMATS}, got {self.response_format!r}"
            )
        if self.occupation_list not in OCCUPATION_LIST_MODES:
            raise ValueError(f"occupation_list must be one of {OCCUPATION_LIST_MODES}, "
                             f"got {self.occupation_list!r}")
        if not (self.timeout_s > 0 and self.batch_file_timeout_s > 0):  # a NaN is no deadline either
            raise ValueError("timeout_s and batch_file_timeout_s must be > 0 seconds")
        if self.occupation_k < 1 or self.max_labels < 1 or self.max_concurrency < 1 or self.max_retries < 0:
            raise ValueError("occupation_k, max_labels and max_concurrency must be >= 1, max_retries >= 0")
