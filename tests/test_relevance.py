"""What the score promises, with the real model and through the faces that recall (REST on a
real server, the MCP tools): an unrelated question finds nothing relevant, a paraphrase sharing
no word with the memory is recalled, an exact match scores high, a memory's score does not
depend on how many other memories the store holds, MCP search prints the real score, and the
cognitive layer never puts a clearly less relevant memory above a clearly more relevant one."""

from __future__ import annotations

import asyncio
import math
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import pytest
from api_fixtures import LiveServer, clean_env, start_server
from mcp import Client

from memoryd.cognition.ranking import logit
from memoryd.mcp.server import build_server
from memoryd.operations import Caller

DEV_NOTES = [
    "The user prefers TypeScript over JavaScript for frontend work",
    "We decided to use PostgreSQL as the production database",
    "CI runs the test suite on every pull request with GitHub Actions",
]
DEPLOYS = "Deploys go out on Tuesdays after standup"
UNRELATED = "what is the capital of France"
PARAPHRASE = "when do we ship?"


@pytest.fixture(scope="module")
def server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("relevance")
    with pytest.MonkeyPatch.context() as mp:
        clean_env(mp, base)
        live = start_server(base, shared_embedder, key_specs={"reader": {"scopes": ["read"]}})
        live.engine.add_many([{"content": text} for text in [*DEV_NOTES, DEPLOYS]])
        try:
            yield live
        finally:
            live.stop()


def mcp_call(live: LiveServer, tool: str, args: dict[str, Any]) -> Any:
    # The lean search of the default profile, and recall / memory_recall of the admin one.
    server = build_server(lambda: live.engine, lambda ctx: Caller.local("test"),
                          tools="memory,admin")

    async def call() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, args)

    return asyncio.run(call())


def test_an_unrelated_question_finds_nothing_relevant(server: LiveServer) -> None:
    threshold = server.engine.settings.recall_threshold
    hits = server.engine.search(UNRELATED, 10, record_access=False)
    assert len(hits) == 4 and all(h.score < threshold for h in hits)
    with server.client("reader") as client:
        recalled = client.post("/recall", json={"prompt": UNRELATED})
        assert recalled.status_code == 200
        assert recalled.json()["block"] == "" and recalled.json()["items"] == []
        found = client.post("/api/v1/search", json={"query": UNRELATED}).json()
        assert found["total"] == 4 and found["relevant"] == 0
    tool = mcp_call(server, "recall", {"prompt": UNRELATED})
    assert tool.structured_content["items"] == [] and tool.content[0].text == "No relevant memories."
    assert mcp_call(server, "memory_recall", {"query": UNRELATED}).structured_content["results"] == []
    said = mcp_call(server, "search", {"query": UNRELATED})
    assert said.structured_content["results"] == []
    assert said.content[0].text == ("4 weaker matches (score below 0.17) left out.\n"
                                    "No relevant memories.")


def test_a_paraphrase_sharing_no_word_is_recalled(server: LiveServer) -> None:
    hits = server.engine.search(PARAPHRASE, 4, record_access=False)
    assert hits[0].memory.content == DEPLOYS and hits[0].keyword_rank is None
    assert hits[0].score >= server.engine.settings.recall_threshold
    with server.client("reader") as client:
        block = client.post("/recall", json={"prompt": PARAPHRASE}).json()
        assert [i["content"] for i in block["items"]] == [DEPLOYS]
        assert DEPLOYS in block["block"]
        found = client.post("/api/v1/search", json={"query": PARAPHRASE}).json()
        assert found["relevant"] >= 1 and found["results"][0]["content"] == DEPLOYS
    tool = mcp_call(server, "recall", {"query": PARAPHRASE})
    assert [i["content"] for i in tool.structured_content["items"]] == [DEPLOYS]
    agentos = mcp_call(server, "memory_recall", {"query": PARAPHRASE}).structured_content
    assert [r["content"] for r in agentos["results"]] == [DEPLOYS]


def test_mcp_search_lists_likely_answers_with_their_real_score(server: LiveServer) -> None:
    hit = server.engine.search(PARAPHRASE, 4, record_access=False)[0]
    said = mcp_call(server, "search", {"query": PARAPHRASE})
    assert [r["content"] for r in said.structured_content["results"]] == [DEPLOYS]
    assert said.structured_content["results"][0]["score"] == round(hit.score, 4)
    text = said.content[0].text
    assert f'score="{hit.score:.2f}"' in text and 'score="0.00"' not in text
    assert text.startswith("3 weaker matches (score below 0.17) left out.")


def test_an_exact_match_scores_high(server: LiveServer) -> None:
    hits = server.engine.search("which database do we use in production?", 4,
                                record_access=False)
    assert hits[0].memory.content == DEV_NOTES[1] and hits[0].score >= 0.8
    assert all(h.score < server.engine.settings.recall_threshold for h in hits[1:])


def test_a_score_does_not_depend_on_the_store_size(shared_embedder, tmp_path) -> None:
    """The same memory scores the same for the same query among 4 memories and among 305, one
    of which now matches the query better than it."""
    import memoryd

    with memoryd.open(f"sqlite:///{tmp_path / 'grow.db'}", embedder=shared_embedder) as mem:
        mem.add_many([{"content": text} for text in [*DEV_NOTES, DEPLOYS]])
        small = mem.search(PARAPHRASE, 4, record_access=False)[0]
        mem.add_many([{"content": f"Recipe {i}: add {w} to the soup and simmer it"}
                      for i, w in enumerate(["basil", "leeks", "lentils", "pepper"] * 75)]
                     + [{"content": "When do we ship the spring catalogue to the printers?"}])
        large = next(h for h in mem.search(PARAPHRASE, 100, record_access=False)
                     if h.memory.id == small.memory.id)
    assert small.memory.content == DEPLOYS
    assert large.score == pytest.approx(small.score, abs=1e-6)
    assert large.fused_score < small.fused_score  # its rank did change


def test_min_score_of_recall_is_a_relevance(server: LiveServer) -> None:
    with server.client("reader") as client:
        everything = client.post("/recall", json={"prompt": UNRELATED, "min_score": 0.0}).json()
        assert len(everything["items"]) == 4
        bad = client.post("/recall", json={"prompt": PARAPHRASE, "min_score": 1.5})
        assert bad.status_code == 422 and "min_score" in bad.text
        old = client.post("/recall", json={"prompt": PARAPHRASE, "min_similarity": 0.2})
        assert old.status_code == 422


# --------------------------------------------------------------------------- cognitive layer

FACTS = [
    ("The staging database listens on port 5432", 400, 0.2),
    ("The staging database now listens on port 5433", 1, 0.9),
    ("Backups of the staging database run nightly at two", 30, 0.5),
    ("The production database is PostgreSQL 16 on a dedicated host", 200, 0.3),
    ("Alice rotates the database passwords every quarter", 5, 0.8),
    ("The cafeteria serves pasta on Thursdays", 0, 1.0),
    ("Our office plants are watered on Mondays", 0, 1.0),
    ("Database migrations run with Alembic before each deploy", 90, 0.4),
]
TWIN = "The release checklist lives in the wiki under Operations"
QUERIES = ["which port does the staging database listen on", "database backups",
           "who rotates passwords", "how are migrations run", "what is for lunch"]


class Clock:
    """A settable clock handed to the engine."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def assert_clear_differences_kept(plain: list, reordered: list, room: float, query: str) -> None:
    """The same hits with the same scores, and none placed below one whose ranking relevance
    (``fused_score``) it exceeds by more than ``room`` log-odds."""
    assert {(h.memory.id, h.score) for h in plain} == {(h.memory.id, h.score) for h in reordered}
    place = {h.memory.id: i for i, h in enumerate(reordered)}
    for a in plain:
        for b in plain:
            if logit(a.fused_score) - logit(b.fused_score) > room + 1e-9:
                assert place[a.memory.id] < place[b.memory.id], (query, a.memory.content,
                                                                 b.memory.content)


def assert_cues_keep_clear_differences(mem: Any, queries: list[str], room: float,
                                       limit: int) -> None:
    """Each query searched without and with the near-tie reorder keeps every clear difference."""
    for query in queries:
        plain = mem.search(query, limit, cognitive=False, associations=False, record_access=False)
        cued = mem.search(query, limit, associations=False, record_access=False)
        assert_clear_differences_kept(plain, cued, room, query)


def test_the_cognitive_layer_never_reverses_a_clear_difference(open_mem, store_url) -> None:
    start = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    clock = Clock(start)
    mem = open_mem(store_url, clock=clock)
    made = []
    for text, age_days, importance in FACTS:
        clock.now = start - timedelta(days=age_days)
        made.append(mem.add(text, importance=importance))
    clock.now = start
    mem.promote(made[2].id)
    # The same note in two projects: equal relevance, one stale and unimportant, one fresh.
    clock.now = start - timedelta(days=300)
    stale = mem.add(TWIN, importance=0.1, scope="project:old")
    clock.now = start - timedelta(days=1)
    fresh = mem.add(TWIN, importance=0.9, scope="project:new")
    clock.now = start
    margin = mem.settings.rank_close_margin
    for query in QUERIES:
        plain = mem.search(query, 8, cognitive=False, associations=False, record_access=False)
        cognitive = mem.search(query, 8, associations=False, record_access=False)
        assert_clear_differences_kept(plain, cognitive, margin, query)
        assert not math.isnan(sum(h.score for h in cognitive))
    # A near-tie is broken by the cognitive signals, whichever way the plain order had it.
    plain = mem.search("where is the release checklist", 2, cognitive=False, associations=False,
                       record_access=False)
    assert {h.memory.id for h in plain} == {stale.id, fresh.id}
    assert plain[0].score == pytest.approx(plain[1].score)
    cognitive = mem.search("where is the release checklist", 2, associations=False,
                           record_access=False)
    assert [h.memory.id for h in cognitive] == [fresh.id, stale.id]


# --------------------------------------------------------------------------- named periods

DECISIONS = [
    ("We decided to move the billing service to Kubernetes", datetime(2026, 3, 3, 10, 0)),
    ("We decided to move the search service to Kubernetes", datetime(2026, 1, 15, 10, 0)),
    ("We decided to keep the auth service on virtual machines", datetime(2026, 2, 20, 10, 0)),
    ("The cafeteria serves pasta on Thursdays", datetime(2026, 3, 4, 10, 0)),
]
TODAY = datetime(2026, 3, 11, 9, 0, tzinfo=timezone.utc)  # a Wednesday: last week is 2-8 March


def _decisions(open_mem, store_url, **settings: Any):
    clock = Clock(TODAY)
    mem = open_mem(store_url, clock=clock, **settings)
    ids = {}
    for text, when in DECISIONS:
        ids[text] = mem.add(text, created_at=when.replace(tzinfo=timezone.utc)).id
    return mem, ids


@pytest.mark.parametrize("query, expected", [
    ("what did we decide last week?", DECISIONS[0][0]),
    ("which service did we move in January?", DECISIONS[1][0]),
    ("what did we decide on February 20?", DECISIONS[2][0]),
])
def test_a_period_the_query_names_lifts_what_happened_in_it(open_mem, store_url, query: str,
                                                             expected: str) -> None:
    mem, ids = _decisions(open_mem, store_url)
    hits = mem.search(query, 4, associations=False, record_access=False)
    assert hits[0].memory.id == ids[expected]


def test_a_named_period_never_reverses_a_clear_difference(open_mem, store_url) -> None:
    mem, ids = _decisions(open_mem, store_url)
    room = mem.settings.rank_close_margin + mem.settings.time_window_margin
    assert_cues_keep_clear_differences(mem, [
        "what did we decide last week?", "which service did we move in January?",
        "what is served for lunch since March 2?", "billing service last week"], room, 4)
    # Lunch last week is in the window but not what a question about decisions is about.
    hits = mem.search("what did we decide last week?", 4, record_access=False)
    assert hits[0].memory.id != ids[DECISIONS[3][0]]


def test_time_expressions_can_be_turned_off(open_mem, store_url, tmp_path) -> None:
    query = "which service did we move in January?"
    mem, ids = _decisions(open_mem, store_url)
    on = mem.search(query, 4, cognitive=False, associations=False, record_access=False)
    off_mem, _ = _decisions(open_mem, f"sqlite:///{tmp_path / 'off.db'}", time_window_margin=0.0)
    off = off_mem.search(query, 4, cognitive=False, associations=False, record_access=False)
    assert [h.score for h in off] == sorted((h.score for h in off), reverse=True)
    assert off[0].memory.content == DECISIONS[0][0]  # billing shares more words with the query
    assert on[0].memory.id == ids[DECISIONS[1][0]]  # the January move, lifted by its period
