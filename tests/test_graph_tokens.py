"""Offline token counters: the real cl100k tokenizer, MiniLM's WordPiece, the estimator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memoryd.graph.tokens import (
    CharsPerTokenCounter,
    EstimateCounter,
    TiktokenCounter,
    get_counter,
)


def test_cl100k_counts_known_texts() -> None:
    counter = get_counter("cl100k")
    assert isinstance(counter, TiktokenCounter)
    # Reference counts of OpenAI's cl100k_base.
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("Deploys go out on Tuesdays.") == 8
    # Special-token strings in user text are ordinary text, not an error.
    assert counter.count("<|endoftext|>") > 1
    texts = ["a b c", "naïve café ☕", "def f(x):\n    return x ** 2\n"]
    assert counter.count_many(texts) == [counter.count(t) for t in texts]


def test_cl100k_loads_without_network(tmp_path) -> None:
    """A fresh process with no proxy and an empty tiktoken cache still loads the vocabulary."""
    code = (
        "from memoryd.graph.tokens import get_counter; "
        "print(get_counter('cl100k').count('offline please'))"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "TIKTOKEN_CACHE_DIR": str(tmp_path / "cache"),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HOME": str(tmp_path),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) == 2


def test_minilm_counts_without_padding_or_truncation() -> None:
    counter = get_counter("minilm")
    assert counter.count("hello world") == 2
    long_text = "word " * 600
    assert counter.count(long_text) == 600  # not cut at 128 or 256, no [CLS]/[SEP]
    assert counter.count_many(["hello world", "a"]) == [2, 1]


def test_estimator_is_close_to_cl100k_and_never_zero_for_text() -> None:
    real, est = get_counter("cl100k"), EstimateCounter()
    samples = [
        "The staging database listens on port 5433 since the migration on 2026-03-01.",
        "Use `./scripts/test tests/test_graph_core.py -q` to run one file.",
        "- wal-busy (gotcha) SQLite busy timeout: set busy_timeout before WAL writes [src/db.py]",
        "I prefer small pull requests with one concern each, reviewed within a day.",
    ]
    for text in samples:
        assert abs(est.count(text) - real.count(text)) <= 0.35 * real.count(text) + 2, text
    assert est.count("") == 0 and est.count("x") >= 1
    assert CharsPerTokenCounter().count("abcde") == 2


def test_unknown_counter_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown token counter 'gpt5'"):
        get_counter("gpt5")
