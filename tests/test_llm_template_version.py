"""The `openai` labeler's cache version is a hand-bumped TEMPLATE_VERSION (models/labeling/llm_protocol.py), part
of the label cache key: a template or schema changed without a bump serves the old template's labels as current
(audit I measured 0 requests after an edited instruction). This test ties a fingerprint of what the model is
shown and the answer schemas to each TEMPLATE_VERSION, so a forgotten bump fails here."""

from __future__ import annotations

import hashlib
import json

from models.labeling import llm_prompt as lp
from models.labeling.llm_config import LLMConfig
from models.labeling.llm_prompt import Occupation, OccupationCatalogue
from models.labeling.llm_protocol import TEMPLATE_VERSION, TwoStepPrompts

# TEMPLATE_VERSION -> sha256 of what the model is shown and the answer schemas (see `template_fingerprint`)
TEMPLATE_FINGERPRINTS = {
    "t2": "08d289129f11a7616cadda5c863ce17cbe8857073969dfa81a8bd5415b9b9605",
}


def template_fingerprint() -> str:
    """sha256 of both steps' messages and response formats (both kinds), the correction turn and a truncated
    prompt, for a two-occupation catalogue: every text and schema of the template, none of the settings."""
    catalogue = OccupationCatalogue([
        Occupation(1, "13-2011.00", "Accountants and Auditors", ((1001, "Prepare reports."), (1002, "Audit."))),
        Occupation(2, "23-1011.00", "Lawyers", ((1005, "Draft legal documents."),))])
    parts: list[object] = [lp.CORRECTION, lp.truncate_prompt("x" * 100 + "y" * 100, 120), lp.TASK_CHARS,
                           lp.MAX_OCCUPATIONS, lp.MAX_READING_CHARS]
    for mode in ("all", "ranked"):
        prompts = TwoStepPrompts(None, catalogue, LLMConfig(occupation_list=mode))
        step1 = prompts.step1_messages("Prepare a <benchmark_prompt> report.", catalogue.occupations)
        answer = lp.parse_step1(json.dumps({"reading": "r", "work": "yes", "occupations": [1]}),
                                catalogue.occupations, catalogue)
        step2 = prompts.step2_messages(step1, answer)
        for fmt in ("json_schema", "json_object"):
            for step, messages, ids in ((1, step1, [1, 2]), (2, step2, [1001, 1002])):
                body = prompts.request_body(messages, step, ids, fmt)
                parts.append({"messages": body["messages"], "response_format": body["response_format"]})
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def test_the_prompt_template_fingerprint_matches_its_template_version() -> None:
    digest = template_fingerprint()
    hint = (f"the LLM prompt template or an answer schema changed (fingerprint {digest}): bump TEMPLATE_VERSION in "
            "models/labeling/llm_protocol.py (it is part of the label cache key: without a bump, labels made with "
            "the old template are served as current) and record the new fingerprint under the new version in "
            "tests/test_llm_template_version.py TEMPLATE_FINGERPRINTS")
    assert TEMPLATE_FINGERPRINTS.get(TEMPLATE_VERSION) == digest, hint
    assert len(set(TEMPLATE_FINGERPRINTS.values())) == len(TEMPLATE_FINGERPRINTS), "a version bump without a change"
