"""FTS5 escaping: user text never reaches FTS5 query syntax, so nothing a user types
raises, and FTS operators in a query are matched as plain words.

hypothesis is not installed here, so the fuzzing is a large parametrised list plus
seeded random strings drawn from an alphabet rich in FTS5 syntax characters.
"""

from __future__ import annotations

import random
import sqlite3
import unicodedata

import pytest

from memoryd.errors import InvalidInput
from memoryd.retrieval.fts import match_expression, query_terms

NASTY_QUERIES = [
    '"', '""', '"""', "'", "''", '"unterminated', "unterminated'", '"a" "b"', "\\", "\\\"",
    "*", "**", "a*", "*a", "typescript*", "^", "^start", "a^b", ":", "::", "col:", ":value",
    "content:typescript", "summary:x tags:y", "memories_fts:foo", "rank:1", "rowid:1",
    "(", ")", "()", "(((", ")))", "(a OR b", "a OR b)", "((a) AND (b))", "{a b}", "{}", "[x]",
    "NEAR", "NEAR(", "NEAR()", "NEAR(a b)", "NEAR(a b, 3)", "NEAR/3", "a NEAR/2 b", "near",
    "AND", "OR", "NOT", "AND OR NOT", "a AND", "OR b", "NOT a", "a NOT", "a AND NOT b",
    "and or not", "a && b", "a || b", "!a", "-a", "+a", "a - b", "a + b", "~a", "a~", "%", "_",
    "__init__", "a_b", "-", "--", "---", "a -b", "- foo", "+", "@", "#hashtag", "$var", "&",
    "|", "||", "=", "==", "!=", "<>", "<", ">", "<=", ">=", "?", "??", "!", ";", ";;", ",", ".",
    "...", "/", "//", "/* comment */", "-- comment", "'; DROP TABLE memories; --",
    "Robert'); DROP TABLE memories;--", "1; SELECT * FROM sqlite_master", "' OR '1'='1",
    "\" OR \"\"=\"", "UNION SELECT", "%' OR 1=1 --", "x' AND sleep(5) --",
    "é", "café", "CAFÉ", "naïve façade", "Zürich", "ß", "İstanbul", "ﬁ ligature", "ｆｕｌｌwidth",
    "日本語", "中文 查询", "한국어", "العربية", "עברית", "русский текст", "ελληνικά", "हिन्दी",
    "🎉", "🎉🎉🎉", "👨‍👩‍👧‍👦", "🇩🇪", "emoji 🚀 rocket", "❤️", "a\u0301", "\u0301",
    "\u200b", "zero\u200bwidth", "\ufeffbom", "\u00a0nbsp", "tab\there", "new\nline", "cr\rlf",
    "\x00", "nul\x00byte", "\x1b[31mred", "\x7f", "\ufffd", "\U0001f600" * 50,
    "a" * 1000, "word " * 300, "x" * 5000, " ".join(f"t{i}" for i in range(500)),
    "the", "the a an", "to be or not to be", "what is it", "?!?!", "1", "0", "-1", "1e10",
    "3.14", "0x1f", "NULL", "null", "None", "true", "SELECT", "select * from memories",
    "MATCH", "bm25()", "highlight(memories_fts, 0, '<', '>')", "snippet", "fts5", "rank",
    "{content summary}: foo", "- {tags} : bar", "^ \"foo\" *", "\"foo\" + \"bar\"",
    "foo\"bar", "foo'bar", "it's", "don't", "O'Brien", "C++", "C#", "F#", ".NET", "node.js",
    "e-mail", "user@example.com", "https://example.com/a?b=c&d=e#f", "C:\\path\\to\\file",
    "/usr/bin/env python", "~/.config", "<script>alert(1)</script>", "${jndi:ldap://x}",
    "{{template}}", "%s %d", "%(name)s", "\\x00", "\\u0000", "*/", "/*",
]


def _fts5_table() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, summary, tags, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO t VALUES ('near and not or typescript café', 'x', '[]')")
    return conn


def _random_queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = list('"\'*^:()-+{}[]\\/.,;!?#@&|~<>=%_ \t\n') + [
        "NEAR", "AND", "OR", "NOT", "near", "foo", "bar", "é", "🎉", "日本", "\u0301", "\x00",
        "typescript", "coffee", "SELECT", "'", '"', "*", "NEAR/3", "content:", "^",
    ]
    out = []
    for _ in range(n):
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 25))))
    return out


RANDOM_QUERIES = _random_queries(400, seed=20240601)


# --------------------------------------------------------------------------- unit level


@pytest.mark.parametrize("query", NASTY_QUERIES + RANDOM_QUERIES)
def test_match_expression_is_valid_fts5(query: str) -> None:
    expression = match_expression(query)
    if expression is None:
        assert query_terms(query, keep_stopwords=True) == []
        return
    # Every term is one double-quoted string: nothing of the user's text is syntax.
    for part in expression.split(" OR "):
        assert part.startswith('"') and part.endswith('"') and '"' not in part[1:-1]
    conn = _fts5_table()
    conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
    conn.close()


def test_match_expression_shape() -> None:
    assert match_expression("") is None
    assert match_expression("   ") is None
    assert match_expression("*** ((( ^^^") is None
    # (case is irrelevant: FTS5's tokenizer folds it)
    assert match_expression("TypeScript NEAR Rust").lower() == '"typescript" or "near" or "rust"'
    assert match_expression("typescript TypeScript TYPESCRIPT").lower() == '"typescript"'
    # stopwords are dropped unless the query is nothing but stopwords
    assert match_expression("what is the database").lower() == '"database"'
    assert match_expression("to be or not to be") is not None
    assert match_expression("alpha beta", mode="and") == '"alpha" AND "beta"'


# --------------------------------------------------------------------------- through the engine


@pytest.fixture(scope="module")
def fts_mem(module_mem_factory):
    mem = module_mem_factory("fts")
    mem.add_many(
        [
            {"content": "The user prefers TypeScript over JavaScript", "tags": ["lang"]},
            {"content": "The bakery is near the train station", "tags": ["places"]},
            {"content": "Café crème in Zürich costs too much", "tags": ["travel"]},
            {"content": "Deployments are not allowed on Fridays", "tags": ["ops"]},
            {"content": "O'Brien wrote the C++ parser; e-mail him at obrien@example.com"},
            {"content": "日本語のメモ: 東京で会議"},
        ]
    )
    return mem


@pytest.mark.parametrize("query", NASTY_QUERIES)
def test_keyword_search_never_raises(fts_mem, query: str) -> None:
    if not query.strip():
        with pytest.raises(InvalidInput):
            fts_mem.search(query, mode="keyword")
        return
    hits = fts_mem.search(query, mode="keyword", limit=5)
    assert isinstance(hits, list)


def test_random_queries_never_raise_in_any_mode(fts_mem) -> None:
    """Seeded fuzzing through the whole engine, hybrid mode included."""
    total = fts_mem.store.count()
    for i, query in enumerate(RANDOM_QUERIES[:150]):
        mode = ("keyword", "hybrid", "vector")[i % 3]
        if not query.strip():
            continue
        fts_mem.search(query, mode=mode, limit=3)
    assert fts_mem.store.count() == total  # nothing was "injected"


def test_fts_operators_are_plain_words(fts_mem) -> None:
    def ids(query: str) -> list[str]:
        return [h.memory.content for h in fts_mem.search(query, mode="keyword", limit=5)]

    assert ids("NEAR") == ["The bakery is near the train station"]
    assert ids("NEAR(bakery station)")[0] == "The bakery is near the train station"
    assert ids("content:TypeScript") == ["The user prefers TypeScript over JavaScript"]
    assert ids('"typescript') == ["The user prefers TypeScript over JavaScript"]
    assert ids("typescript*") == ["The user prefers TypeScript over JavaScript"]
    assert ids("^JavaScript")[0] == "The user prefers TypeScript over JavaScript"
    assert ids("NOT")[0] == "Deployments are not allowed on Fridays"
    assert ids("O'Brien")[0].startswith("O'Brien")
    assert ids("C++ parser")[0].startswith("O'Brien")
    assert ids("obrien@example.com")[0].startswith("O'Brien")


def test_unicode_folding_and_stemming(fts_mem) -> None:
    def top(query: str) -> str:
        return fts_mem.search(query, mode="keyword", limit=1)[0].memory.content

    assert top("cafe creme") == "Café crème in Zürich costs too much"
    assert top("ZÜRICH") == "Café crème in Zürich costs too much"
    assert top("zurich") == "Café crème in Zürich costs too much"
    assert top("deployment") == "Deployments are not allowed on Fridays"  # porter stemming
    assert top("東京で会議") == "日本語のメモ: 東京で会議"


def test_decomposed_and_dotted_capital_queries_match(module_mem_factory) -> None:
    mem = module_mem_factory("fts-nfd")
    mem.add_many([{"content": "Café crème in Zürich costs too much"},
                  {"content": "Meeting in İstanbul next week"}])
    for query in (unicodedata.normalize("NFD", "Zürich"), unicodedata.normalize("NFD", "crème"),
                  "İstanbul"):
        hits = mem.search(query, mode="keyword", associations=False)
        assert hits, f"keyword search for {query!r} found nothing"


def test_injection_text_leaves_store_intact(fts_mem) -> None:
    before = fts_mem.store.count()
    for query in ["'; DROP TABLE memories; --", "Robert'); DROP TABLE memories;--",
                  "x\"); DELETE FROM memories; --"]:
        fts_mem.search(query, mode="hybrid")
    assert fts_mem.store.count() == before
    conn = sqlite3.connect(fts_mem.store.path)
    try:
        conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES('integrity-check', 1)")
    finally:
        conn.close()


def test_queries_with_lone_surrogates_are_invalid_input(fts_mem) -> None:
    """A lone surrogate (e.g. '\\ud800' from a JSON body) is refused up front in every mode
    (it used to reach the tokenizer and surface as EmbeddingError)."""
    for mode in ("keyword", "vector", "hybrid"):
        with pytest.raises(InvalidInput, match="surrogate"):
            fts_mem.search("abc \ud800", mode=mode)
