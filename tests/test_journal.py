"""The daily Markdown journal: sections on both backends, day boundaries, purged content
never shown, paging through a long day, the ``memoryd journal`` command and the REST route.

History rows are stamped with the wall clock, so day boundaries are controlled with the
time zone instead: :func:`zone_starting_at` makes a fixed-offset zone in which a chosen
instant is exactly midnight.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest
from api_fixtures import LiveServer, module_server
from conftest import STORE_BACKENDS

import memoryd
from memoryd.engine import Engine
from memoryd.errors import InvalidInput
from memoryd.dates import day_bounds, parse_day
from memoryd.engine.views.journal import collect_day, iter_changes, render_markdown


@pytest.fixture(params=STORE_BACKENDS)
def backend_mem(request: pytest.FixtureRequest, open_mem, tmp_path: Path) -> Engine:
    """An engine on a fresh store of each backend."""
    if request.param == "sqlite":
        return open_mem(f"sqlite:///{tmp_path / 'journal.db'}")
    return open_mem(request.getfixturevalue("pg_database")())


def mark() -> datetime:
    """An instant strictly between the history rows written before and after the call."""
    time.sleep(0.02)
    instant = datetime.now(UTC)
    time.sleep(0.02)
    return instant


def zone_starting_at(instant: datetime) -> tuple[date, timezone]:
    """A fixed-offset zone in which ``instant`` is midnight, and the day it starts."""
    instant = instant.astimezone(UTC)
    since_midnight = instant - instant.replace(hour=0, minute=0, second=0, microsecond=0)
    return instant.date(), timezone(-since_midnight)


def section(markdown: str, heading: str) -> str:
    """The text of one ``## heading`` section."""
    after = markdown.split(f"## {heading}\n", 1)[1]
    return after.split("\n## ", 1)[0]


# --------------------------------------------------------------------------- the Markdown


def test_a_day_renders_each_kind_of_change_and_never_purged_content(backend_mem: Engine) -> None:
    mem = backend_mem
    mem.add("The office moved to Building 4 on the previous day")
    start = mark()

    paris = "The user lives in Paris and works as a data engineer"
    assert mem.ingest(paris).decision == "create"
    assert mem.ingest(paris).decision == "reinforce"
    detail = mem.ingest("The user lives in Paris and works as a data engineer at Spotify")
    assert detail.decision == "update"
    port = mem.ingest("The staging database listens on port 5432")
    moved = mem.ingest("The staging database listens on port 5433")
    assert moved.decision == "supersede" and moved.superseded_id == port.memory_id
    pref = mem.add("The user prefers tabs over spaces", node_type="preference",
                   tags=["style"], agent_id="claude-code")
    note = mem.add("Standup is at 9:30 in room Alpha", node_type="note")
    mem.update(note.id, content="Standup is at 10:15 in room Beta")
    gone = mem.add("The old build server was called hermes")
    mem.delete(gone.id)
    party = mem.add("The surprise party for Dana is on Friday at Lina's flat")
    mem.admin.purge(party.id)
    mem.admin.purge(moved.memory_id)  # its text is also recorded on the superseded memory's row
    mem.promote(pref.id, reason="confirmed")
    mem.demote(port.memory_id, reason="stale")

    day, zone = zone_starting_at(start)
    markdown = mem.admin.journal(day, tz=zone)

    assert markdown.startswith(f"# memoryd journal — {day.isoformat()}\n")
    assert ("7 learned · 3 updated or corrected · 2 strengthened · 1 weakened · 3 forgotten"
            in markdown)
    assert "Building 4" not in markdown  # the day before
    for secret in ("surprise party", "Dana", "port 5433"):
        assert secret not in markdown

    learned = section(markdown, "Learned")
    assert "### Preferences" in learned and "### Notes" in learned
    assert "The user prefers tabs over spaces — tags: style · agent: claude-code" in learned
    assert "Standup is at 10:15 in room Beta" in learned  # current content
    assert "The old build server was called hermes _(since deleted)_" in learned
    assert f"`{party.id}` _(content purged)_" in learned

    updated = section(markdown, "Updated and corrected")
    assert ("extended: The user lives in Paris and works as a data engineer + "
            "The user lives in Paris and works as a data engineer at Spotify") in updated
    assert ("updated: Standup is at 9:30 in room Alpha → Standup is at 10:15 in room Beta"
            in updated)
    assert (f"superseded: The staging database listens on port 5432 → `{moved.memory_id}` "
            "_(no longer stored)_") in updated

    strength = section(markdown, "Strengthened / weakened")
    assert "- reinforced 1 time (1 memory)" in strength
    assert "- promoted 1 time (1 memory)" in strength
    assert "- demoted 1 time (1 memory)" in strength

    forgotten = section(markdown, "Forgotten")
    assert "deleted (fact): The old build server was called hermes" in forgotten
    assert f"purged `{party.id}`" in forgotten and f"purged `{moved.memory_id}`" in forgotten

    earlier = mem.admin.journal(day - timedelta(days=1), tz=zone)
    assert "Building 4" in earlier and "Paris" not in earlier
    assert earlier.count("\n- ") == 1


def test_an_empty_day_says_so(mem: Engine) -> None:
    mem.add("Something learned today, not in 2001")
    markdown = mem.admin.journal(date(2001, 1, 1), tz=UTC)
    assert markdown == "# memoryd journal — 2001-01-01\n\nNothing was recorded on this day.\n"


def test_housekeeping_is_counted_not_listed(mem: Engine) -> None:
    start = mark()
    mem.add("The deploy pipeline runs on Tuesdays")
    mem.admin.reembed()
    day, zone = zone_starting_at(start)
    markdown = mem.admin.journal(day, tz=zone)
    assert "1 learned · 1 housekeeping" in markdown
    assert markdown.rstrip().endswith("_Housekeeping: 1 re-embedded._")
    assert markdown.count("The deploy pipeline runs on Tuesdays") == 1


# --------------------------------------------------------------------------- reading the day


def test_paging_reads_exactly_the_days_changes(backend_mem: Engine) -> None:
    mem = backend_mem
    mem.add_many([{"content": f"before the window, note {i}"} for i in range(3)])
    start = mark()
    # One batch: on PostgreSQL its rows share one timestamp, which paging must get past.
    mem.add_many([{"content": f"inside the window, note {i}"} for i in range(5)])
    mem.update(mem.list(limit=1)[0].id, tags=["edited"])
    end = mark()
    mem.add_many([{"content": f"after the window, note {i}"} for i in range(3)])

    expected = [e.seq for e in mem.store.changes_between(start, end)]
    assert len(expected) == 6
    for page_size in (1, 2, 5, 6, 100):
        got = [e.seq for e in iter_changes(mem.store, start, end, page_size=page_size)]
        assert got == expected, page_size

    day, zone = zone_starting_at(start)
    whole = render_markdown(collect_day(mem.store, day, zone))
    assert render_markdown(collect_day(mem.store, day, zone, page_size=2)) == whole
    assert "before the window" not in whole and "after the window" in whole

    cut = render_markdown(collect_day(mem.store, day, zone, page_size=2, max_changes=4,
                                      section_limit=2))
    assert "Stopped after reading 4 changes; the day holds more." in cut
    assert "4 learned" in cut and "_…and 2 more._" in cut
    assert cut.count("inside the window") == 2


def test_day_bounds_follow_the_zone() -> None:
    start, end = day_bounds(date(2024, 3, 31), timezone(timedelta(hours=2)))
    assert start == datetime(2024, 3, 30, 22, tzinfo=UTC)
    assert end - start == timedelta(days=1)
    local_start, local_end = day_bounds(date(2024, 5, 17))
    assert local_start.replace(tzinfo=None) == datetime(2024, 5, 17)
    assert local_end.replace(tzinfo=None) == datetime(2024, 5, 18)


@pytest.mark.parametrize("text", ["yesterday", "2024-5-17", "20240517", "2024-13-01",
                                  "2024-02-30", "9999-12-31", ""])
def test_parse_day_rejects_what_is_not_a_day(text: str) -> None:
    with pytest.raises(InvalidInput, match="day"):
        parse_day(text)


# --------------------------------------------------------------------------- the CLI


def test_cli_prints_writes_and_refuses_to_overwrite(run_cli, cli_env, shared_embedder,
                                                    tmp_path: Path) -> None:
    path = Path(cli_env["MEMORYD_HOME"]) / "memoryd.db"
    with memoryd.open(f"sqlite:///{path}", embedder=shared_embedder) as mem:
        mem.add("The user's editor is Neovim", node_type="preference", tags=["tools"])
        today = date.today()

    printed = run_cli("journal")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.startswith(f"# memoryd journal — {today.isoformat()}\n")
    assert "The user's editor is Neovim — tags: tools" in printed.stdout

    target = tmp_path / "journal.md"
    written = run_cli("journal", "--day", today.isoformat(), "--output", str(target))
    assert written.returncode == 0, written.stderr
    assert target.read_text(encoding="utf-8") == printed.stdout

    target.write_text("keep me", encoding="utf-8")
    refused = run_cli("journal", "--output", str(target))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "--force" in refused.stderr and target.read_text(encoding="utf-8") == "keep me"
    forced = run_cli("journal", "--output", str(target), "--force")
    assert forced.returncode == 0, forced.stderr
    assert "Neovim" in target.read_text(encoding="utf-8")

    bad = run_cli("journal", "--day", "2024-13-01")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    flat = " ".join(bad.stderr.split())
    assert "--day" in flat and "not a valid date" in flat

    utc_today = datetime.now(timezone.utc).date().isoformat()
    in_utc = run_cli("journal", "--tz", "UTC", "--day", utc_today)
    assert in_utc.returncode == 0 and "Neovim" in in_utc.stdout
    unknown = run_cli("journal", "--tz", "Nowhere/Land")
    assert unknown.returncode != 0 and "Traceback" not in unknown.stderr
    assert "--tz" in unknown.stderr and "unknown time zone" in " ".join(unknown.stderr.split())


# --------------------------------------------------------------------------- REST


@pytest.fixture(scope="module")
def live_server(shared_embedder, tmp_path_factory) -> Iterator[LiveServer]:
    yield from module_server(shared_embedder, tmp_path_factory)


def test_rest_route(live_server: LiveServer) -> None:
    with live_server.client("admin") as admin:
        created = admin.post("/api/v1/memories",
                             json={"content": "Release notes go out on Fridays"})
        assert created.status_code == 201, created.text
        today = date.today().isoformat()
        response = admin.get("/api/v1/journal", params={"day": today})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["day"] == today
        assert "Release notes go out on Fridays" in body["markdown"]

        bad = admin.get("/api/v1/journal", params={"day": "17/05/2024"})
        assert bad.status_code == 422 and "YYYY-MM-DD" in bad.json()["error"]
        assert admin.get("/api/v1/journal").status_code == 422
        utc_today = datetime.now(timezone.utc).date().isoformat()
        zoned = admin.get("/api/v1/journal", params={"day": utc_today, "tz": "UTC"})
        assert zoned.status_code == 200 and "Fridays" in zoned.json()["markdown"]
        unknown = admin.get("/api/v1/journal", params={"day": today, "tz": "Mars/Base"})
        assert unknown.status_code == 422 and "unknown time zone" in unknown.json()["error"]

    with live_server.client("reader") as reader:
        assert reader.get("/api/v1/journal", params={"day": today}).status_code == 200
    with live_server.client("alpha") as bound:  # limited to one scope: the journal spans all
        assert bound.get("/api/v1/journal", params={"day": today}).status_code == 403
    assert httpx.get(f"{live_server.url}/api/v1/journal", params={"day": today}).status_code == 401
