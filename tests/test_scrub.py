"""models/scrub.py: the masking itself (the end-to-end grep is tests/test_llm_reliability.py)."""

from __future__ import annotations

import pytest

from models.labeling.llm_prompt import clip
from models.scrub import MASK, contains_secret, scrub, scrub_strings, scrubber
from resources.untrusted import known_secrets, scrub_untrusted

KEY = "sk-test-0123456789abcdefSECRET"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (f"Incorrect API key provided: {KEY}.", f"Incorrect API key provided: {MASK}."),
        (f"proxy said {KEY[8:]} twice {KEY[8:]}", f"proxy said {MASK} twice {MASK}"),  # a known secret anywhere
        ("Authorization: Bearer abc.def-1234567890xyz", f"Authorization: Bearer {MASK}"),
        ('{"authorization": "Basic dXNlcjpwYXNzd29yZA=="}', f'{{"authorization": "Basic {MASK}"}}'),
        ("GET /v1?api_key=XYZ123456&x=1", f"GET /v1?api_key={MASK}&x=1"),
        ("another key sk-proj-AAAAbbbbCCCC1234 here", f"another key {MASK} here"),  # unknown, sk-shaped
        ("bearer bonds and a secret recipe", "bearer bonds and a secret recipe"),  # ordinary words stay
        ("The prompt asks an accountant to audit statements.", "The prompt asks an accountant to audit statements."),
        (None, None),
        ("", ""),
    ],
)
def test_scrub_masks_secrets_and_keeps_ordinary_text(text: str | None, want: str | None) -> None:
    assert scrub(text, [KEY[8:], KEY, "short"]) == want


def test_short_values_are_not_secrets_and_the_scrubber_fixes_them_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_FEATURE_TOKEN_COUNT", "1")
    monkeypatch.setenv("USE_SECRET_STORE", "true")
    assert scrub_untrusted("a 1 and true") == "a 1 and true"  # found by name, short: would mask ordinary words
    assert not {"1", "true"} & set(known_secrets())
    clean = scrubber([KEY])
    assert clean(f"x{KEY}y") == f"x{MASK}y" and clean("plain") == "plain"
    assert contains_secret(f"..{KEY}..", [KEY]) and not contains_secret(scrub(f"..{KEY}..", [KEY]), [KEY])


def test_environment_secrets_are_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "custom-proxy-key-without-prefix-42")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok_abcdefgh12345")
    monkeypatch.setenv("PLAIN_SETTING_DIR", "custom-proxy-key")
    assert {"custom-proxy-key-without-prefix-42", "tok_abcdefgh12345"} <= set(known_secrets())
    assert "custom-proxy-key" not in known_secrets()
    assert scrub_untrusted("echo custom-proxy-key-without-prefix-42 / tok_abcdefgh12345") == f"echo {MASK} / {MASK}"
    assert scrub_untrusted("a given key: given-key-123456", ["given-key-123456"]) == f"a given key: {MASK}"


def test_the_key_the_process_sends_is_masked_from_four_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    """A local server started with `--api-key hunter2` that echoes it: the 8-character floor for environment values
    let the configured key through into label_failures (found by an audit)."""
    monkeypatch.setenv("OPENAI_API_KEY", "hunter2")
    assert scrub_untrusted("invalid api key: hunter2") == f"invalid api key: {MASK}"
    assert scrub_untrusted("invalid api key: hunter2", ["hunter2"]) == f"invalid api key: {MASK}"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert scrub_untrusted("key k3y1 echoed", ["k3y1"]) == f"key {MASK} echoed"  # handed in by the client
    assert scrub("a 1 and true", ["1"]) == f"a {MASK} and true"  # the pure function masks what it is given
    # a 1-3 character placeholder is no secret, and masking it would break every answer ("15-1252.00")
    monkeypatch.setenv("OPENAI_API_KEY", "1")
    assert scrub_untrusted('{"occupations": ["15-1252.00"]}', ["1"]) == '{"occupations": ["15-1252.00"]}'


CUT = "AUDITKEYzq8W3nT5vR2pL9xYq"  # not sk-shaped: only the known-secret masking can catch it


@pytest.mark.parametrize(("text", "want"), [
    (f"read: {CUT[:-1]}", f"read: {MASK}"),  # cut at the end
    (clip(f"read: {CUT}", 30), f"read: {MASK}…"),  # cut by a clip, its ellipsis kept
    (f"{CUT[5:]} and more", f"{MASK} and more"),  # the head cut off
    (f"read: {CUT[:8]}", f"read: {MASK}"),  # FRAGMENT_MIN_CHARS (8) of it
    (f"read: {CUT[:7]}", f"read: {CUT[:7]}"),  # fewer: ordinary text may end so
    (f"{CUT[8:20]} in the middle", f"{MASK} in the middle"),  # neither its head nor its tail: masked too
    (f"{CUT[8:15]} in the middle", f"{CUT[8:15]} in the middle"),  # 7 characters: ordinary text may hold them
])
def test_a_secret_cut_at_the_texts_end_or_start_is_masked(text: str, want: str) -> None:
    """A truncation that cut a known key (not sk-shaped) leaves a fragment no whole-key match finds."""
    assert scrub(text, [CUT]) == want


PROBE = "sk-probe-XYZ123"  # the audit's key (2026-12-07); its server echoed it in every form below


@pytest.mark.parametrize(("text", "want"), [
    ("HTTP 401: raw probe-XYZ123", f"HTTP 401: raw {MASK}"),  # without its sk-, inside the text: was stored
    ("spaced s k - p r o b e - X Y Z 1 2 3 end", f"spaced {MASK} end"),
    ("upper SK-PROBE-XYZ123 end", f"upper {MASK} end"),
    ("json sk-probe\\/XYZ123", f"json {MASK}"),  # a / escaped (JSON) between its characters
    ("The task asks an accountant to audit statements (15-1252.00).",
     "The task asks an accountant to audit statements (15-1252.00)."),
])
def test_a_known_secret_is_masked_in_every_form_a_server_echoed(text: str, want: str) -> None:
    """An audit's server echoed the key without its prefix, spaced out, upper-cased and escaped; only the whole
    key and fragments at a text's ends were masked, so 12 of its 15 characters reached label_cache,
    label_failures, the label store, the run storage and the console."""
    assert scrub(text, [PROBE]) == want


def test_a_known_secret_inside_base64_credentials_is_masked() -> None:
    import base64

    slash_key = "sk-abc/def+ghi/jkl0123456789"
    for key in (PROBE, slash_key):
        for prefix in ("Bearer ", "user:", ""):  # each of base64's three alignments
            encoded = base64.b64encode((prefix + key).encode()).decode()
            masked = scrub(f"Authorisation was {encoded} then", [key])
            assert encoded not in masked and masked.startswith("Authorisation was ") and MASK in masked
            left = masked.removeprefix("Authorisation was ").removesuffix(" then").split(MASK)
            assert all(len(part) <= 12 for part in left)  # what stays is the prefix's and the end group's


def test_every_decoded_string_is_masked() -> None:
    decoded = {"reading": f"x {KEY}", "tasks": [1, f"{KEY}", {KEY: None}], "work": True}
    assert scrub_strings(decoded, scrubber([KEY])) == {"reading": f"x {MASK}", "tasks": [1, MASK, {MASK: None}],
                                                      "work": True}


def _escaped(text: str, backslashes: int = 1) -> str:
    return "".join(f"{chr(92) * backslashes}u{ord(c):04x}" for c in text)


@pytest.mark.parametrize(("text", "want"), [
    # an HTML error body quoting the key with its first letter escaped, as a repr doubled its backslash
    (f"<html>502 for {_escaped(CUT[0], 2)}{CUT[1:]}</html>", f"<html>502 for {MASK}</html>"),
    (f"echo {_escaped(CUT)} end", f"echo {MASK} end"),  # every character escaped
    (f"proxy {_escaped('sk-proj-', 2)}AAAAbbbbCCCC1234", f"proxy {MASK}"),  # unknown to the process, sk-shaped
    (f"caf{chr(92)}u00e9 and a {chr(92)}ud83d", f"caf{chr(92)}u00e9 and a {chr(92)}ud83d"),  # no secret: as it was
])
def test_a_secret_written_as_escapes_in_plain_text_is_masked(text: str, want: str) -> None:
    """A non-JSON body holding \\uXXXX escapes as characters is stored as text: a key written so was stored
    whole, for anyone to decode back (an audit: `\\\\u0073k-AUDIT-...` in label_failures and the run storage)."""
    assert scrub(text, [CUT]) == want


ENCODED_KEY = "sk-PROBE-SECRET-123"  # a probe's key (2026-12-07): its stub echoed it in each form below


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if 0x21 <= ord(c) <= 0x7E else c for c in text)


@pytest.mark.parametrize("form", [
    ENCODED_KEY.encode().hex(),  # hexadecimal
    "".join(f"%{b:02X}" for b in ENCODED_KEY.encode()),  # every byte percent-encoded
    "".join(f"&#{ord(c)};" for c in ENCODED_KEY),  # HTML decimal character references
    "".join(f"&#x{ord(c):x};" for c in ENCODED_KEY),  # and hexadecimal ones
    ENCODED_KEY.replace("-", "%2d"),  # a lower-case escape between short pieces
    ENCODED_KEY.replace("-", "&#45;"),
    _full_width(ENCODED_KEY),
    ENCODED_KEY[::-1],
])
def test_a_known_secret_a_server_encoded_is_masked(form: str) -> None:
    """Each form was stored whole in prompt_task_labels' rationale, label_failures, the label store, the run
    storage and the console (a probe's stub server, 2026-12-07)."""
    masked = scrub(f"Incorrect API key provided: {form} (see docs)", [ENCODED_KEY])
    assert masked == f"Incorrect API key provided: {MASK} (see docs)"


def test_text_with_escape_markers_and_no_secret_is_kept_as_it_was() -> None:
    for text in ("R&D, 100% sure, caf\u00e9 &amp; bar", "a%20b &lt;x&gt;", "\uff21\uff22 wide letters"):
        assert scrub(text, [ENCODED_KEY]) == text
