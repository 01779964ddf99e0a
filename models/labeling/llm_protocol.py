"""The two-step protocol of the `openai` labeler (data/reference/PROTOCOL.md), for one prompt.

1. **Occupations**: is the prompt occupational work, and which 1-3 occupations of the candidate list (every
   O*NET occupation grouped by SOC major group, or the offline ranking's top-k) would do it? "Not work" ends
   here: an OK outcome with `is_work=False` and no labels, one request.
2. **Tasks**: the same conversation continues with the full task lists of the chosen occupations; the model
   keeps every task the prompt requires.

`TwoStepPrompts` builds what the model is shown at each step (the texts and schemas: models/labeling/
llm_prompt.py) and `request_body` the chat-completions body. `resources/llm_labeler.py` `label_one` runs the
two steps through a `ChatClient` (resources/llm_client.py), whose answers are validated by `parse_step1` /
`parse_step2` (only offered IDs are accepted). The Batch-API path (models/labeling/llm_batch.py) builds the
same requests from the same `TwoStepPrompts`.

Pure module: no network, no dagster, no environment, no files.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from models.labeling import llm_prompt as lp
from models.labeling.llm_config import LLMConfig
from models.labeling.llm_prompt import Occupation, OccupationCatalogue, Step1Answer

TEMPLATE_VERSION = "t2"  # bump when a template or a schema changes (part of the cache key)


def request_body(config: LLMConfig, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any],
                 fmt: str) -> dict[str, Any]:
    """The chat-completions body of one request: `schema` goes into a response format of kind `fmt`."""
    body: dict[str, Any] = {
        "model": config.model, "messages": messages, "temperature": config.temperature,
        "max_tokens": config.max_output_tokens,
        "response_format": lp.response_format_param(fmt, schema_name, schema, config.max_reading_chars),
    }
    if config.seed is not None:
        body["seed"] = config.seed
    return body


class TwoStepPrompts:
    """The messages and answer schemas of both steps for one catalogue and configuration.

    `index` is the offline TaskIndex: in 'ranked' mode `index.rank_occupations(prompt, k)` gives the candidates."""

    def __init__(self, index: Any, catalogue: OccupationCatalogue, config: LLMConfig) -> None:
        self.index = index
        self.catalogue = catalogue
        self.config = config
        mode = "all" if config.occupation_list == "all" else f"r{config.occupation_k}"
        # the template and the settings that change what the model is shown (part of the cache key)
        self.template_version = f"{TEMPLATE_VERSION}-{mode}-m{config.max_labels}-c{config.max_prompt_chars}"
        self._all_system: str | None = None  # 'all' mode: one system message for every prompt

    def offered(self, prompt: str) -> list[Occupation]:
        """The step-1 candidate occupations for this prompt."""
        if self.config.occupation_list == "all":
            return self.catalogue.occupations
        out: list[Occupation] = []
        for code, _score in self.index.rank_occupations(prompt, self.config.occupation_k):
            occ = self.catalogue.by_code.get(str(code))
            if occ is not None and occ not in out:
                out.append(occ)
        return out

    def system_message(self, offered: Sequence[Occupation]) -> str:
        if self.config.occupation_list == "all":
            if self._all_system is None:
                self._all_system = lp.system_message(
                    self.config.max_labels, lp.occupation_lines(self.catalogue.occupations, grouped=True), True)
            return self._all_system
        return lp.system_message(self.config.max_labels, lp.occupation_lines(offered, grouped=False), False)

    def step1_messages(self, prompt: str, offered: Sequence[Occupation]) -> list[dict[str, str]]:
        text = lp.truncate_prompt(prompt, self.config.max_prompt_chars, self.config.head_fraction)
        return [{"role": "system", "content": self.system_message(offered)},
                {"role": "user", "content": lp.delimit_prompt(text)}]

    @staticmethod
    def step2_messages(step1: list[dict[str, str]], answer: Step1Answer) -> list[dict[str, str]]:
        """Step 1's request unchanged (a cacheable prefix), its validated answer, then the task lists."""
        said = json.dumps({"reading": answer.reading or "", "work": "yes",
                           "occupations": [o.number for o in answer.occupations]})
        return [*step1, {"role": "assistant", "content": said},
                {"role": "user", "content": lp.step2_message(answer.occupations)}]

    def schema(self, step: int, ids: Sequence[int]) -> tuple[str, dict[str, Any]]:
        """(name, JSON schema) of a step's answer; `ids`: the occupation numbers / task IDs offered."""
        if step == 1:
            return lp.STEP1_SCHEMA_NAME, lp.step1_schema(ids)
        return lp.STEP2_SCHEMA_NAME, lp.step2_schema(ids, self.config.max_labels)

    def request_body(self, messages: list[dict[str, str]], step: int, ids: Sequence[int], fmt: str
                     ) -> dict[str, Any]:
        """The body of one step's request; `ids`: the occupation numbers / task IDs offered."""
        return request_body(self.config, messages, *self.schema(step, ids), fmt)
