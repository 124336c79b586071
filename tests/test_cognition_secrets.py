"""Secret scanning: catches real credential shapes, leaves prose and ordinary code alone.

Fake credentials are generated at run time (seeded) so that no token-shaped literal sits in
the repository to trip push protection or other scanners.
"""

from __future__ import annotations

import itertools
import random
import string

import pytest

from memoryd.cognition.secrets import (
    Finding,
    ensure_no_secrets,
    redact,
    scan,
    shannon_entropy,
)
from memoryd.errors import SecretDetected

_RNG = random.Random(1234)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


def rand(n: int, alphabet: str = ALNUM) -> str:
    while True:
        value = "".join(_RNG.choice(alphabet) for _ in range(n))
        has_digit = any(c.isdigit() for c in value) or not any(c.isdigit() for c in alphabet)
        has_alpha = any(c.isalpha() for c in value) or not any(c.isalpha() for c in alphabet)
        if has_digit and has_alpha:
            return value


def b64url(n: int) -> str:
    return rand(n, ALNUM + "_-")


AWS_ID = "AKIA" + rand(16, UPPER_DIGITS)
AWS_SESSION_ID = "ASIA" + rand(16, UPPER_DIGITS)
AWS_SECRET = rand(40, ALNUM + "/+")
GH_PAT = "ghp_" + rand(36)
GH_OAUTH = "gho_" + rand(36)
GH_SERVER = "ghs_" + rand(36)
GH_FINE = "github_pat_" + rand(22) + "_" + rand(59)
GITLAB = "glpat-" + rand(20)
SLACK_BOT = "xoxb-" + rand(11, string.digits) + "-" + rand(12, string.digits) + "-" + rand(24)
SLACK_USER = "xoxp-" + rand(11, string.digits) + "-" + rand(12, string.digits) + "-" + rand(32)
STRIPE = "sk_" + "live_" + rand(24)
STRIPE_RESTRICTED = "rk_" + "live_" + rand(24)
OPENAI = "sk-" + rand(48)
OPENAI_PROJ = "sk-proj-" + b64url(64)
ANTHROPIC = "sk-ant-api03-" + b64url(80)
GOOGLE = "AIza" + rand(35, ALNUM + "_-")
HF = "hf_" + rand(34)
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + b64url(40) + "." + b64url(43)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join(rand(64, ALNUM + "+/") for _ in range(4))
    + "\n-----END RSA PRIVATE KEY-----"
)
OPENSSH_PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    + "\n".join(rand(70, ALNUM + "+/") for _ in range(3))
    + "\n-----END OPENSSH PRIVATE KEY-----"
)
HEX32 = rand(32, "0123456789abcdef")
RANDOM_PW = "Tr0ub4dor&3x"

POSITIVES: list[tuple[str, str, str]] = [
    # (text, kind, the secret that must be inside a finding)
    (f"export AWS_ACCESS_KEY_ID={AWS_ID}", "aws_access_key_id", AWS_ID),
    (f"temporary creds {AWS_SESSION_ID} expire at noon", "aws_access_key_id", AWS_SESSION_ID),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key", AWS_SECRET),
    (f'AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"', "aws_secret_access_key", AWS_SECRET),
    (f"my token is {GH_PAT}, use it for the CI", "github_token", GH_PAT),
    (f"git clone https://{GH_OAUTH}@github.com/acme/app.git", "github_token", GH_OAUTH),
    (f"GITHUB_TOKEN: {GH_SERVER}", "github_token", GH_SERVER),
    (f"fine-grained: {GH_FINE}", "github_token", GH_FINE),
    (f"gitlab {GITLAB} for the runner", "gitlab_token", GITLAB),
    (f"SLACK_BOT_TOKEN={SLACK_BOT}", "slack_token", SLACK_BOT),
    (f"the slack user token {SLACK_USER}", "slack_token", SLACK_USER),
    (f"stripe.api_key = '{STRIPE}'", "stripe_key", STRIPE),
    (f"restricted key {STRIPE_RESTRICTED}", "stripe_key", STRIPE_RESTRICTED),
    (f"OPENAI_API_KEY={OPENAI}", "openai_key", OPENAI),
    (f"client = OpenAI(api_key=\"{OPENAI_PROJ}\")", "openai_key", OPENAI_PROJ),
    (f"ANTHROPIC_API_KEY={ANTHROPIC}", "anthropic_key", ANTHROPIC),
    (f"maps key {GOOGLE} in the frontend", "google_api_key", GOOGLE),
    (f"HF_TOKEN={HF}", "huggingface_token", HF),
    (f"Authorization: Bearer {JWT}", "jwt", JWT),
    (f"cookie session={JWT}; Path=/", "jwt", JWT),
    (f"key file:\n{PEM}\nend", "private_key", PEM),
    (f"{OPENSSH_PEM}", "private_key", OPENSSH_PEM),
    ("connect to postgres://app:S3cr3tPass@db.internal:5432/prod", "url_password", "S3cr3tPass"),
    ("REDIS_URL=redis://default:hunter2hunter@cache:6379/0", "url_password", "hunter2hunter"),
    ("amqp://guest:pa55word@rabbit/", "url_password", "pa55word"),
    ("https://admin:letmein@intranet.example.org/", "url_password", "letmein"),
    (f"password={RANDOM_PW}", "password_assignment", RANDOM_PW),
    (f'DB_PASSWORD="{RANDOM_PW}"', "password_assignment", RANDOM_PW),
    (f'{{"user": "bob", "password": "{RANDOM_PW}"}}', "password_assignment", RANDOM_PW),
    ("smtp_pass: Winter2024!", "password_assignment", "Winter2024!"),
    (f"api_key={HEX32}", "secret_assignment", HEX32),
    (f"X-API-KEY: {HEX32}", "secret_assignment", HEX32),
    (f"client_secret = '{rand(32)}'", "secret_assignment", ""),
    (f"SECRET_KEY = 'django-insecure-{rand(40, ALNUM + '#@!^&')}'", "secret_assignment", ""),
    (f"token: {rand(40, ALNUM)}", "secret_assignment", ""),
    (f"callback https://x.io/cb?access_token={rand(30)}&state=1", "secret_assignment", ""),
    (f"Authorization: Bearer {rand(40, ALNUM + '._-')}", "bearer_token", ""),
    ("heroku auth token=550e8400-e29b-41d4-a716-446655440000", "secret_assignment", ""),
]


@pytest.mark.parametrize(("text", "kind", "secret"), POSITIVES)
def test_positive_examples_are_found_and_redacted(text: str, kind: str, secret: str) -> None:
    findings = scan(text)
    assert kind in [f.kind for f in findings], findings
    if secret:
        assert any(f.start <= text.index(secret) and text.index(secret) + len(secret) <= f.end
                   for f in findings)
    redacted = redact(text, findings)
    assert f"[REDACTED:{kind}]" in redacted
    if secret:
        assert secret not in redacted
    assert scan(redacted) == []


NEGATIVES: list[str] = [
    # prose about credentials
    "Remember to rotate the API key every 90 days.",
    "The password must be at least 12 characters long and contain a digit.",
    "I prefer storing secrets in the system keychain rather than in .env files.",
    "Tokens are counted with tiktoken; the context window is 200k tokens.",
    "The secret to good sourdough is a long cold ferment.",
    "Use a password manager like 1Password or Bitwarden.",
    "Password: the user's chosen passphrase, hashed with argon2.",
    "Token: a unit of text produced by the tokenizer.",
    "He was the bearer of bad news about the deploy.",
    "Stripe keys start with sk_live_ or sk_test_, GitHub tokens with ghp_.",
    "AWS access key ids begin with AKIA and are 20 characters long.",
    "Google API keys begin with AIza; JWTs begin with eyJ.",
    "The famous example is password=hunter2, which everyone has seen.",
    "password=hunter",
    "password: changeme",
    "token=abc123",
    "secret=None",
    "sk-learn is not a thing, it is sklearn.",
    "Please set sk-this-is-not-a-real-openai-key in the docs as a placeholder.",
    "We moved the API to https://api.example.com:8443/v2/users",
    "Contact me at alice@example.com or ssh git@github.com:acme/app.git",
    "ssh://git@github.com/acme/app.git",
    "postgres://app@localhost:5432/prod",
    "the commit 3f2a9c1e5b7d4a6f8e0c2b4d6f8a0c2e4b6d8f0a fixed it",
    "request id 550e8400-e29b-41d4-a716-446655440000 failed",
    "max_tokens=2048 and temperature=0.2",
    "num_tokens: 1500",
    "The build took 12.5s; cache hit ratio 0.87.",
    # code that handles credentials without containing one
    "password = request.form['password']",
    "api_key = os.environ['OPENAI_API_KEY']",
    'token = os.getenv("GITHUB_TOKEN")',
    "secret = settings.SECRET_KEY",
    "password = hashlib.sha256(raw.encode()).hexdigest()",
    "def login(username: str, password: str) -> bool:",
    "api_key: Optional[str] = None",
    "token = tokenizer.encode(text)",
    "client = OpenAI(api_key=api_key)",
    "headers = {'Authorization': f'Bearer {token}'}",
    'password: "${DB_PASSWORD}"',
    "password: ${{ secrets.DB_PASSWORD }}",
    "API_KEY=<your-api-key>",
    "OPENAI_API_KEY=YOUR_OPENAI_API_KEY",
    "api_key = 'your-api-key-here'",
    "SECRET_KEY=changeme-in-production",
    "token = '********'",
    "password: xxxxxxxx",
    "redis://:${REDIS_PASSWORD}@redis:6379",
    "postgresql://user:password@localhost/dbname",
    "DATABASE_URL=postgres://$DB_USER:$DB_PASS@db:5432/app",
    "if not token: raise AuthError('missing token')",
    "password_hash = bcrypt.hashpw(password, salt)",
    "self.access_token = response.json()['access_token']",
    "const secret = process.env.JWT_SECRET;",
    "password = userPassword",
    "token = refreshToken",
    "`tokens = text.split()`",
    "The private key never leaves the HSM; we sign with the public key's pair.",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "The key AIza is too short to be a key.",
    "import base64; data = base64.b64encode(payload)",
    "The error said: invalid_grant (token expired at 2024-03-01T12:00:00Z)",
    "pass: 98.5% of the suite",
    "secret_santa_budget = 25",
    "bypass=true",
    "I decided to use JWT auth with 15 minute access tokens and 7 day refresh tokens.",
    "Our Slack channel is #xox-team and the bot is called xoxo.",
    "The sha256 of the release is e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative_examples_are_left_alone(text: str) -> None:
    assert scan(text) == []


def test_false_positive_rate_on_a_paragraph_of_ordinary_code_and_prose() -> None:
    code = '''
import os
from dataclasses import dataclass

@dataclass
class Config:
    host: str = "127.0.0.1"
    port: int = 8765
    password: str | None = None
    api_key: str | None = os.environ.get("MEMORYD_API_KEY")

def connect(cfg: Config) -> None:
    token = issue_token(cfg.api_key, scope="read")
    session.headers["Authorization"] = "Bearer " + token
    if cfg.password is None:
        raise ValueError("password is required; set MEMORYD_PASSWORD")
'''
    prose = (
        "Yesterday we rotated every token after the audit. The new policy says secrets live "
        "in Vault, passwords are hashed with argon2id, and API keys expire after 30 days. "
        "Version 2.3.1 fixed the bug where the refresh token was logged at debug level."
    )
    assert scan(code) == []
    assert scan(prose) == []


def test_multiple_findings_are_ordered_disjoint_and_all_redacted() -> None:
    text = f"aws {AWS_ID} and gh {GH_PAT} and url postgres://u:Pa55w0rdX@h/db and {JWT}"
    findings = scan(text)
    assert [f.kind for f in findings] == ["aws_access_key_id", "github_token", "url_password", "jwt"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))
    redacted = redact(text, findings)
    assert redacted == (
        "aws [REDACTED:aws_access_key_id] and gh [REDACTED:github_token] and url "
        "postgres://u:[REDACTED:url_password]@h/db and [REDACTED:jwt]"
    )


def test_provider_rule_wins_over_generic_assignment() -> None:
    text = f"api_key={OPENAI}"
    assert scan(text) == [Finding("openai_key", 8, 8 + len(OPENAI))]


def test_unterminated_private_key_is_redacted_to_the_end() -> None:
    text = "here:\n-----BEGIN EC PRIVATE KEY-----\n" + rand(64) + "\n" + rand(30)
    findings = scan(text)
    assert [f.kind for f in findings] == ["private_key"]
    assert findings[0].end == len(text)


def test_token_embedded_in_longer_words_is_not_split() -> None:
    # A prefix glued to other identifier characters is part of a longer identifier.
    assert scan("my_ghp_" + rand(36) + "_suffix_var") == []
    assert scan("xAKIA" + rand(16, UPPER_DIGITS)) == []


def test_ensure_no_secrets_raises_with_kinds() -> None:
    ensure_no_secrets("nothing to see here")
    with pytest.raises(SecretDetected) as info:
        ensure_no_secrets(f"{GH_PAT} {AWS_ID} {GH_OAUTH}")
    assert info.value.kinds == ["github_token", "aws_access_key_id"]


def test_shannon_entropy() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert shannon_entropy(rand(64)) > 5.0


@pytest.mark.parametrize(
    "text",
    [
        "xoxb-" + "1" * 20000 + "-" + "a-" * 20000 + "!",
        "sk-" + "a-" * 30000 + "!",
        "eyJ" + "a" * 30000 + ".eyJ" + "b" * 30000 + ".",
        "postgres://" + "u" * 30000 + ":" + "p" * 30000,
        "password" * 10000 + "=" * 10000,
        "db_" * 20000 + "password:" + " " * 20000,
        "-----BEGIN RSA PRIVATE KEY-----" + "x" * 60000,
        ("token = " + "ab1" * 10 + "\n") * 3000,
    ],
)
def test_pathological_inputs_do_not_backtrack(text: str) -> None:
    """Guard against catastrophic backtracking (a hung ingest); generous bound, not a budget."""
    import time

    started = time.perf_counter()
    scan(text)
    assert time.perf_counter() - started < 2.0
