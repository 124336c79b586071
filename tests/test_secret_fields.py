"""Secret scanning beyond content: the newer credential kinds (memoryd's own keys first) and
``scan_fields`` over every text value of a write, with field paths that never echo a secret.

Fake credentials are generated at run time (seeded), as in test_cognition_secrets.py.
"""

from __future__ import annotations

import base64
import random
import string

import pytest
from pydantic import BaseModel

from memoryd.cognition.secrets import (
    FieldFinding,
    SecretInFields,
    ensure_no_secrets_in_fields,
    redact,
    redact_fields,
    scan,
    scan_fields,
)
from memoryd.errors import InvalidInput, SecretDetected
from memoryd.keys import KEY_PREFIX

_RNG = random.Random(99)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"


def rand(n: int, alphabet: str = ALNUM) -> str:
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in value) and (
            any(c.isalpha() for c in value) or not any(c.isalpha() for c in alphabet)
        ):
            return value


def memoryd_key() -> str:
    """A key shaped exactly as keys.create_key makes them (token_urlsafe(32))."""
    return KEY_PREFIX + rand(43, URLSAFE)


MK = memoryd_key()
GH = "ghp_" + rand(36)

# (kind, a credential of that kind); every one is generated in the provider's format.
NEW_KINDS: list[tuple[str, str]] = [
    ("memoryd_key", MK),
    ("google_oauth_secret", "GOCSPX-" + rand(28, URLSAFE)),
    ("azure_storage_key", "AccountKey=" + rand(86, ALNUM + "+/") + "=="),
    ("azure_client_secret", rand(3) + "8Q~" + rand(34, ALNUM + "_~.")),
    ("digitalocean_token", "dop_v1_" + rand(64, HEX)),
    ("heroku_key", "HRKU-" + rand(60, URLSAFE)),
    ("vault_token", "hvs." + rand(90, URLSAFE)),
    ("databricks_token", "dapi" + rand(32, HEX)),
    ("doppler_token", "dp.pt." + rand(43)),
    ("supabase_token", "sbp_" + rand(40, HEX)),
    ("gitlab_token", "glrt-" + rand(20, URLSAFE)),
    ("atlassian_token", "ATATT3" + rand(180, URLSAFE)),
    ("linear_key", "lin_api_" + rand(40)),
    ("notion_token", "ntn_" + rand(11, string.digits) + rand(35)),
    ("postman_key", "PMAK-" + rand(24, HEX) + "-" + rand(34, HEX)),
    ("grafana_token", "glsa_" + rand(32) + "_" + rand(8, HEX)),
    ("newrelic_key", "NRAK-" + rand(27, string.ascii_uppercase + string.digits)),
    ("slack_token", "xapp-1-A" + rand(10, string.ascii_uppercase + string.digits) + "-"
     + rand(13, string.digits) + "-" + rand(64, HEX)),
    ("discord_webhook", "https://discord.com/api/webhooks/" + rand(18, string.digits) + "/"
     + rand(68, URLSAFE)),
    ("telegram_bot_token", rand(10, string.digits) + ":AA" + rand(33, URLSAFE)),
    ("twilio_key", "SK" + rand(32, HEX)),
    ("mailgun_key", "key-" + rand(32, HEX)),
    ("mailchimp_key", rand(32, HEX) + "-us21"),
    ("stripe_webhook_secret", "whsec_" + rand(32)),
    ("shopify_token", "shpat_" + rand(32, HEX)),
    ("square_token", "sq0csp-" + rand(43, URLSAFE)),
    ("groq_key", "gsk_" + rand(52)),
    ("xai_key", "xai-" + rand(80)),
    ("perplexity_key", "pplx-" + rand(48)),
    ("replicate_token", "r8_" + rand(37)),
    ("age_secret_key", "AGE-SECRET-KEY-1" + rand(58, string.ascii_uppercase + string.digits)),
]


@pytest.mark.parametrize(("kind", "secret"), NEW_KINDS, ids=[k for k, _ in NEW_KINDS])
def test_new_kinds_are_found_in_a_sentence_and_redacted(kind: str, secret: str) -> None:
    text = f"for the deploy use {secret} and nothing else"
    findings = scan(text)
    assert [f.kind for f in findings] == [kind]
    start = text.index(secret)
    assert findings[0].start <= start and start + len(secret) <= findings[0].end
    redacted = redact(text, findings)
    assert secret not in redacted and f"[REDACTED:{kind}]" in redacted


def test_memoryd_keys_are_caught_in_every_spelling_an_agent_might_write() -> None:
    for text in (
        MK,
        f"MEMORYD_TOKEN={MK}",
        f"Authorization: Bearer {MK}",
        f'{{"headers": {{"X-API-Key": "{MK}"}}}}',
        f"the key ({MK}) was printed once",
    ):
        assert "memoryd_key" in [f.kind for f in scan(text)], text


@pytest.mark.parametrize(
    "text",
    [
        "mk_abc123",  # the prefix `memoryd keys list` shows
        "keys list shows mk_Ab3dEf for the ci key",
        "mk_this_is_a_long_snake_case_identifier_name_",  # 43 chars, no digit or capital
        "my_mk_" + rand(43, URLSAFE),  # glued to a longer identifier
        "TASK0123456789abcdef0123456789abcdef",  # SK inside a word
        "the key-value store keeps key-" + "z" * 32,
        "commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e-us is not a mailchimp key",
        "Authorization: Basic dXNlcjpwYXNz",  # user:pass, the textbook placeholder
        "basic authorization is disabled",
        "We use HashiCorp Vault; tokens start with hvs. and are short-lived.",
    ],
)
def test_near_misses_are_left_alone(text: str) -> None:
    assert scan(text) == []


def test_basic_auth_header_with_a_real_password_is_caught() -> None:
    value = base64.b64encode(b"deploy:" + rand(14).encode()).decode()
    text = f'curl -H "Authorization: Basic {value}" https://ci.internal/api'
    findings = scan(text)
    assert [f.kind for f in findings] == ["basic_auth"]
    assert value not in redact(text, findings)


# --- scan_fields ------------------------------------------------------------------------
def test_scan_fields_reaches_every_text_value_and_names_the_field() -> None:
    write = {
        "content": "The staging deploy notes",
        "summary": f"uses {GH}",
        "tags": ["deploy", MK],
        "source": f"https://ops:{rand(12)}@ci.internal/job",
        "category": "ops",
        "metadata": {
            "db": {"password": "Tr0ub4dor&3x", "port": 5432, "ok": True, "ratio": 0.5},
            "hosts": [{"name": "a"}, {"name": "b", "api_key": rand(32, HEX)}],
            "nothing": None,
        },
    }
    found = {(f.field, f.kind) for f in scan_fields(write)}
    assert found == {
        ("summary", "github_token"),
        ("tags[1]", "memoryd_key"),
        ("source", "url_password"),
        ("metadata.db.password", "password_assignment"),
        ("metadata.hosts[1].api_key", "secret_assignment"),
    }
    assert scan_fields({"content": "nothing secret", "metadata": {"k": [1, "two", None]}}) == []


def test_a_secret_used_as_a_mapping_key_is_found_without_putting_it_in_a_path() -> None:
    findings = scan_fields({"metadata": {"plain": "x", MK: {"nested": GH}}})
    assert [(f.field, f.kind) for f in findings] == [
        ("metadata[key 1]", "memoryd_key"),
        ("metadata[1].nested", "github_token"),
    ]
    assert all(MK not in f.field for f in findings)


def test_field_spans_point_into_the_field_text() -> None:
    text = f"prefix {GH} suffix"
    (finding,) = scan_fields({"metadata": {"note": text}})
    assert text[finding.start : finding.end] == GH
    (finding,) = scan_fields({"metadata": {"password": "Tr0ub4dor&3x"}})
    assert (finding.start, finding.end) == (0, len("Tr0ub4dor&3x"))


def test_refusal_names_kinds_and_fields_and_never_the_secret() -> None:
    write = {"content": "ok", "tags": [MK], "metadata": {"creds": {"token": GH}}}
    with pytest.raises(SecretInFields) as info:
        ensure_no_secrets_in_fields(write)
    message = str(info.value)
    assert "tags[0] (memoryd_key)" in message and "metadata.creds.token (github_token)" in message
    assert MK not in message and GH not in message
    assert isinstance(info.value, SecretDetected) and isinstance(info.value, InvalidInput)
    assert info.value.kinds == ["memoryd_key", "github_token"]
    assert {f.field for f in info.value.findings} == {"tags[0]", "metadata.creds.token"}
    ensure_no_secrets_in_fields({"content": "fine", "tags": ["a"], "metadata": {"n": 1}})


def test_refusal_of_many_findings_is_bounded() -> None:
    with pytest.raises(SecretInFields) as info:
        ensure_no_secrets_in_fields({"tags": [memoryd_key() for _ in range(9)]})
    assert "and 4 more" in str(info.value)


def test_redact_fields_returns_a_redacted_copy_and_leaves_the_input_alone() -> None:
    write = {"summary": f"key {MK}", "tags": ["a", GH], "metadata": {MK: "v", "n": 3}}
    out, findings = redact_fields(write)
    assert out == {
        "summary": "key [REDACTED:memoryd_key]",
        "tags": ["a", "[REDACTED:github_token]"],
        "metadata": {"[REDACTED:memoryd_key]": "v", "n": 3},
    }
    assert len(findings) == 3 and write["tags"][1] == GH
    assert scan_fields(out) == []


def test_scan_fields_screens_pydantic_models_and_tuples() -> None:
    class Trigger(BaseModel):
        type: str
        topic: str

    out, findings = redact_fields({"trigger": Trigger(type="context", topic=GH), "t": ("x", MK)})
    assert [f.field for f in findings] == ["trigger.topic", "t[1]"]
    assert isinstance(out["trigger"], Trigger) and out["trigger"].topic == "[REDACTED:github_token]"
    assert out["t"] == ("x", "[REDACTED:memoryd_key]")


def test_structures_deeper_than_the_bound_are_refused_not_skipped() -> None:
    deep: object = GH
    for _ in range(40):
        deep = {"a": deep}
    with pytest.raises(InvalidInput, match=r"metadata(\.a)+: nested deeper than 32 levels"):
        scan_fields({"metadata": deep})
    shallow: object = GH
    for _ in range(10):
        shallow = [shallow]
    assert [f.kind for f in scan_fields({"metadata": shallow}, max_depth=12)] == ["github_token"]
    with pytest.raises(InvalidInput):
        scan_fields({"metadata": shallow}, max_depth=5)


def test_field_finding_is_a_plain_value() -> None:
    assert FieldFinding("tags[0]", "jwt", 0, 3) == FieldFinding("tags[0]", "jwt", 0, 3)
