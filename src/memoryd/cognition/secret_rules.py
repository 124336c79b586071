"""The provider formats :mod:`memoryd.cognition.secrets` flags on sight.

Each rule is ``(kind, literal hints, pattern)``. A rule runs only when one of its hints
occurs in the text (a plain substring test), and patterns start with their literal prefix
so that the regex engine can skip ahead; the left boundary (no identifier character before
the match) is checked by the scanner because a leading look-behind would disable that
optimisation. Every pattern is linear-time: fixed prefixes, bounded or possessive-free
character classes, no nested quantifiers over the same characters.

Formats come from the providers' documentation and the public rule sets of secret
scanners (gitleaks, detect-secrets, GitHub push protection). Only formats with a prefix or
shape specific enough to be flagged without context are here; the context rules
(passwords in URLs, assignments, bearer tokens) live in :mod:`memoryd.cognition.secrets`.
"""

from __future__ import annotations

import re

Rule = tuple[str, tuple[str, ...], re.Pattern[str]]

# Right boundary: not glued to a longer identifier.
END = r"(?![A-Za-z0-9_\-])"
IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
# At least one upper-case letter or digit among the next n characters: random tokens have
# one (a 43-character one lacks both with probability ~1e-10); snake_case identifiers do not.
_MIXED = r"(?=[A-Za-z0-9_\-]{0,%d}[A-Z0-9])"


def _rule(kind: str, hints: str | tuple[str, ...], pattern: str, flags: int = 0) -> Rule:
    return (kind, (hints,) if isinstance(hints, str) else hints, re.compile(pattern, flags))


PROVIDER_RULES: tuple[Rule, ...] = (
    _rule(
        "private_key",
        "PRIVATE KEY",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)",
        re.S,
    ),
    _rule("age_secret_key", "AGE-SECRET-KEY-1", r"AGE-SECRET-KEY-1[0-9A-Z]{58}" + END),
    # memoryd's own API keys: mk_ + 43 URL-safe characters (keys.create_key).
    _rule("memoryd_key", "mk_", r"mk_" + _MIXED % 42 + r"[A-Za-z0-9_\-]{43}" + END),
    # Cloud providers.
    _rule(
        "aws_access_key_id",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + END,
    ),
    _rule("google_api_key", "AIza", r"AIza[0-9A-Za-z_\-]{35}" + END),
    _rule("google_oauth_secret", "GOCSPX-", r"GOCSPX-[A-Za-z0-9_\-]{28}" + END),
    _rule(
        "azure_storage_key",
        "AccountKey=",
        r"AccountKey=[A-Za-z0-9+/]{86}==",
    ),
    _rule(
        "azure_client_secret",
        "Q~",
        r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])",
    ),
    _rule("digitalocean_token", "_v1_", r"do[opr]_v1_[a-f0-9]{64}" + END),
    _rule("heroku_key", "HRKU-", r"HRKU-[A-Za-z0-9_\-]{60}" + END),
    _rule("vault_token", ("hvs.", "hvb."), r"hv[sb]\.[A-Za-z0-9_\-]{24,}" + END),
    _rule("databricks_token", "dapi", r"dapi[a-f0-9]{32}(?:-\d)?" + END),
    _rule("doppler_token", "dp.", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}" + END),
    _rule("supabase_token", "sbp_", r"sbp_[a-f0-9]{40}" + END),
    # Source hosting and package registries.
    _rule("github_token", "gh", r"gh[pousr]_[A-Za-z0-9]{36,255}" + END),
    _rule("github_token", "github_pat_", r"github_pat_[A-Za-z0-9_]{22,255}" + END),
    _rule(
        "gitlab_token",
        ("glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "glft-"),
        r"gl(?:pat|ptt|dt|rt|cbt|ft)-[A-Za-z0-9_\-]{20,}" + END,
    ),
    _rule("npm_token", "npm_", r"npm_[A-Za-z0-9]{36}" + END),
    _rule("pypi_token", "pypi-AgE", r"pypi-AgE[A-Za-z0-9_\-]{50,}" + END),
    _rule("atlassian_token", "ATATT3", r"ATATT3[A-Za-z0-9_\-=]{150,}" + END),
    _rule("linear_key", "lin_api_", r"lin_api_[A-Za-z0-9]{40}" + END),
    _rule("notion_token", "ntn_", r"ntn_[0-9]{11}[A-Za-z0-9]{35}" + END),
    _rule("postman_key", "PMAK-", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + END),
    _rule("grafana_token", "glsa_", r"glsa_[A-Za-z0-9]{32}_[a-f0-9]{8}" + END),
    _rule("grafana_token", "glc_", r"glc_[A-Za-z0-9+/]{32,}={0,2}"),
    _rule("newrelic_key", "NRAK-", r"NRAK-[A-Z0-9]{27}" + END),
    # Messaging.
    _rule(
        "slack_token",
        ("xox", "xapp-"),
        r"(?:xox[abposr]-[0-9]{6,}|xapp-[0-9]-[A-Z0-9]+-[0-9]+)-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*"
        + END,
    ),
    _rule(
        "slack_webhook",
        "hooks.slack.com",
        r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,}",
    ),
    _rule(
        "discord_webhook",
        "/api/webhooks/",
        r"https://(?:canary\.|ptb\.)?discord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_\-]{60,}",
    ),
    _rule("telegram_bot_token", ":AA", r"[0-9]{8,10}:AA[A-Za-z0-9_\-]{33}" + END),
    _rule("twilio_key", "SK", r"SK[0-9a-f]{32}" + END),
    _rule("sendgrid_key", "SG.", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + END),
    _rule("mailgun_key", "key-", r"key-[0-9a-f]{32}" + END),
    _rule("mailchimp_key", "-us", r"[0-9a-f]{32}-us[0-9]{1,2}" + END),
    # Payments and commerce.
    _rule("stripe_key", "_live_", r"[sr]k_live_[A-Za-z0-9]{16,}" + END),
    _rule("stripe_webhook_secret", "whsec_", r"whsec_[A-Za-z0-9]{32,}" + END),
    _rule("shopify_token", "shp", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + END),
    _rule(
        "square_token",
        ("sq0atp-", "sq0csp-", "EAAA"),
        r"(?:sq0atp-[0-9A-Za-z_\-]{22}|sq0csp-[0-9A-Za-z_\-]{43}|EAAA[A-Za-z0-9_\-]{60})" + END,
    ),
    # Model providers (what agents handle most).
    _rule("anthropic_key", "sk-ant-", r"sk-ant-(?:[a-z0-9]+-)?[A-Za-z0-9_\-]{20,}" + END),
    _rule(
        "openai_key",
        "sk-",
        r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}" + END,
    ),
    _rule("huggingface_token", "hf_", r"hf_[A-Za-z0-9]{30,}" + END),
    _rule("groq_key", "gsk_", r"gsk_[A-Za-z0-9]{52}" + END),
    _rule("xai_key", "xai-", r"xai-[A-Za-z0-9]{80}" + END),
    _rule("perplexity_key", "pplx-", r"pplx-[A-Za-z0-9]{48}" + END),
    _rule("replicate_token", "r8_", r"r8_[A-Za-z0-9]{37}" + END),
    # Tokens.
    _rule(
        "jwt",
        "eyJ",
        r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}" + END,
    ),
)

# Values of context rules that are obvious placeholders, never credentials.
PLACEHOLDER_WORDS = (
    "example",
    "your",
    "xxx",
    "changeme",
    "change_me",
    "change-me",
    "placeholder",
    "dummy",
    "redacted",
    "sample",
    "replace",
    "insert",
    "secret_here",
    "here",
    "todo",
    "fake",
    "mytoken",
    "mypassword",
    "notasecret",
)
PLACEHOLDER_EXACT = {
    "none",
    "null",
    "nil",
    "true",
    "false",
    "undefined",
    "password",
    "pass",
    "passwd",
    "secret",
    "token",
    "required",
    "optional",
    "string",
    "str",
    "empty",
}
