"""The store contract of the work tables (tasks, task messages, wait jobs), run on both
backends (``store`` fixture): round trips, order, filters, the final-status guard, and the
logical rows that migration and backup copy."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoryd.errors import StoreError
from memoryd.models import PlanStep, Task, TaskMessage
from memoryd.store.base import Store
from memoryd.waits import WaitJob, WaitStatus, WakeAttempt
from memoryd.waits.model import Observation

NOW = datetime(2025, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)


def task(task_id: str = "t_1", **fields: Any) -> Task:
    fields.setdefault("created_at", NOW)
    fields.setdefault("updated_at", NOW)
    return Task(id=task_id, name=fields.pop("name", "Ship the release"), **fields)


def job(job_id: str = "w_1", status: WaitStatus = WaitStatus.WATCHING, **fields: Any) -> dict:
    created = fields.pop("created_at", 1_750_000_000.25)
    owner = fields.pop("owner", {"runner": "host-a", "scope": "user", "agent_id": None})
    return WaitJob(id=job_id, target="file:/tmp/build.log", criteria={"contains": "OK"},
                   timeout_s=600, created_at=created, deadline=created + 600, status=status,
                   updated_at=created, owner=owner, **fields).to_dict()


# --------------------------------------------------------------------------- tasks


def test_task_round_trips_every_field(store: Store) -> None:
    done_at = NOW + timedelta(minutes=5)
    original = task(plan=[PlanStep(text="build", done=True, done_at=done_at),
                          PlanStep(text="déployer 🚀")],
                    status="paused", agent_id="bot-1", scope="project:x",
                    metadata={"repo": "memoryd", "n": [1, 2]}, memory_id="m-1")
    store.work.save_task(original)
    assert store.work.get_task("t_1") == original
    assert store.work.get_task("missing") is None


def test_saving_a_task_again_replaces_it_and_keeps_its_messages(store: Store) -> None:
    store.work.save_task(task())
    store.work.add_task_message(TaskMessage(task_id="t_1", content="first", created_at=NOW))
    store.work.save_task(task(status="completed", name="Renamed"))
    assert store.work.get_task("t_1").status == "completed"
    assert [m.content for m in store.work.task_messages("t_1")] == ["first"]


def test_tasks_list_newest_update_first_with_filters(store: Store) -> None:
    for i, (scope, agent, status) in enumerate([("user", "a", "active"),
                                                ("project:x", "b", "active"),
                                                ("project:x", "a", "completed")]):
        store.work.save_task(task(f"t_{i}", scope=scope, agent_id=agent, status=status,
                             updated_at=NOW + timedelta(seconds=i)))
    assert [t.id for t in store.work.list_tasks()] == ["t_2", "t_1", "t_0"]
    assert [t.id for t in store.work.list_tasks(statuses=["active"])] == ["t_1", "t_0"]
    assert [t.id for t in store.work.list_tasks(scope="project:x", agent_id="a")] == ["t_2"]
    assert [t.id for t in store.work.list_tasks(limit=1)] == ["t_2"]


def test_messages_get_growing_ids_and_touch_the_task(store: Store) -> None:
    store.work.save_task(task())
    later = NOW + timedelta(hours=1)
    added = [store.work.add_task_message(TaskMessage(task_id="t_1", role=role, kind=kind,
                                                content=f"m{i}", created_at=later,
                                                metadata={"i": i}))
             for i, (role, kind) in enumerate([("agent", "note"), ("agent", "decision"),
                                                ("system", "note"), ("distilled", "note")])]
    assert [m.id for m in added] == sorted(m.id for m in added) and added[0].id > 0
    assert store.work.get_task("t_1").updated_at == later
    newest = store.work.task_messages("t_1")
    assert [m.content for m in newest] == ["m3", "m2", "m1", "m0"]
    assert newest[0] == added[3]
    oldest = store.work.task_messages("t_1", after=added[0].id, newest_first=False, limit=2)
    assert [m.content for m in oldest] == ["m1", "m2"]
    assert [m.content for m in store.work.task_messages("t_1", roles=["agent"], kinds=["decision"])] \
        == ["m1"]
    assert store.work.task_messages("t_1", roles=["distilled"])[0].role == "distilled"


def test_a_message_for_a_missing_task_is_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="no task"):
        store.work.add_task_message(TaskMessage(task_id="nope", content="x", created_at=NOW))
    assert store.work.task_messages("nope") == []


# --------------------------------------------------------------------------- wait jobs


def test_wait_job_round_trips_through_its_dict_form(store: Store) -> None:
    full = WaitJob.from_dict(job(
        task_id="t_9", wake={"to": "openclaw", "session_key": "agent:x"}, result="BUILD OK",
        checks=7, cursor={"inode": 12, "offset": 345},
        last_observation=Observation(matched=True, seen="BUILD OK", changed=True, at=1.5),
        wake_attempts=(WakeAttempt(at=2.5, to="openclaw", ok=False, status=503, error="busy"),),
        owner={"runner": "host-a", "scope": "project:x", "agent_id": "bot-1", "actor": "k"},
    ))
    assert store.work.save_wait_job(full.to_dict()) is True
    back = WaitJob.from_dict(store.work.get_wait_job(full.id))
    assert back.created_at == pytest.approx(full.created_at, abs=1e-6)
    assert back.deadline == pytest.approx(full.deadline, abs=1e-6)
    assert back.to_dict() | {"created_at": 0, "deadline": 0, "updated_at": 0} == \
        full.to_dict() | {"created_at": 0, "deadline": 0, "updated_at": 0}
    assert store.work.get_wait_job("w_missing") is None


def test_a_final_status_is_never_replaced(store: Store) -> None:
    store.work.save_wait_job(job(checks=1))
    assert store.work.save_wait_job(job(checks=2)) is True  # watching -> watching: progress
    cancelled = job(status=WaitStatus.CANCELLED, result="cancelled", resolved_at=1_750_000_100.0)
    assert store.work.save_wait_job(cancelled) is True
    late = job(status=WaitStatus.RESOLVED, result="BUILD OK", checks=9)
    assert store.work.save_wait_job(late) is False  # another process finished it meanwhile
    assert store.work.save_wait_job(job(checks=3)) is False  # nor back to watching
    kept = store.work.get_wait_job("w_1")
    assert (kept["status"], kept["result"]) == ("cancelled", "cancelled")
    attempt = WakeAttempt(at=3.0, to="webhook", ok=True, status=200)
    with_wake = WaitJob.from_dict(cancelled).evolve(wake_attempts=(attempt,)).to_dict()
    assert store.work.save_wait_job(with_wake) is True  # same status: the wake attempt is kept
    assert store.work.get_wait_job("w_1")["wake_attempts"][0]["status"] == 200


def test_wait_jobs_list_filters_by_status_owner_task_and_change(store: Store) -> None:
    base = time.time()
    store.work.save_wait_job(job("w_a", created_at=base, task_id="t_1"))
    store.work.save_wait_job(job("w_b", created_at=base + 1, status=WaitStatus.RESOLVED,
                            owner={"runner": "host-b", "scope": "project:x", "agent_id": "bot"}))
    store.work.save_wait_job(job("w_c", created_at=base + 2,
                            owner={"runner": "host-a", "scope": "project:x", "agent_id": "bot"}))
    ids = lambda **kw: [j["id"] for j in store.work.list_wait_jobs(**kw)]  # noqa: E731
    assert ids() == ["w_c", "w_b", "w_a"]
    assert ids(statuses=["watching"]) == ["w_c", "w_a"]
    assert ids(statuses=["watching"], runner="host-a") == ["w_c", "w_a"]
    assert ids(scope="project:x", agent_id="bot") == ["w_c", "w_b"]
    assert ids(scope="user") == ["w_a"]  # no scope in the owner means the user scope
    assert ids(task_id="t_1") == ["w_a"]
    assert ids(updated_after=base + 1.5) == ["w_c"]
    assert ids(limit=1) == ["w_c"]


def test_malformed_wait_jobs_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="not a wait job"):
        store.work.save_wait_job({"id": "w_x", "target": "file:/x"})
    with pytest.raises(StoreError, match="not a wait status"):
        store.work.save_wait_job(job() | {"status": "sleeping"})
    assert store.work.list_wait_jobs() == []


# --------------------------------------------------------------------------- logical rows


def test_work_tables_export_and_import_between_backends(store: Store, store_factory) -> None:
    store.work.save_task(task(plan=[PlanStep(text="a", done=True, done_at=NOW)]))
    store.work.add_task_message(TaskMessage(task_id="t_1", content="hello", created_at=NOW))
    store.work.save_wait_job(job(task_id="t_1"))
    other = "postgresql" if store.backend == "sqlite" else "sqlite"
    target = store_factory(other, name="copy")
    for table in ("tasks", "task_messages", "wait_jobs"):
        rows = store.transfer.export_rows(table)
        assert len(rows) == 1 and rows[0]["_pos"] > 0
        assert target.transfer.import_rows(table, rows) == 1
        assert target.transfer.import_rows(table, rows) == 0  # copying twice copies nothing twice
    assert target.work.get_task("t_1") == store.work.get_task("t_1")
    assert target.work.task_messages("t_1") == store.work.task_messages("t_1")
    assert target.work.get_wait_job("w_1") == store.work.get_wait_job("w_1")
    later = target.work.add_task_message(TaskMessage(task_id="t_1", content="next", created_at=NOW))
    assert later.id > store.work.task_messages("t_1")[0].id


def test_the_wait_lock_is_per_store(store: Store, store_factory) -> None:
    """The runner of a host's waits holds ``waits@<host>``: exclusive within one store,
    independent between two stores (two databases of one PostgreSQL server included)."""
    other = store_factory(store.backend, name="other")
    with store.maintenance_lock("waits@host-a") as mine:
        assert mine
        with store.maintenance_lock("waits@host-a") as again:
            assert not again
        with store.maintenance_lock("waits@host-b") as another_host:
            assert another_host
        with other.maintenance_lock("waits@host-a") as other_store:
            assert other_store


def test_messages_are_counted_after_an_id_and_by_role(store: Store) -> None:
    store.work.save_task(task())
    ids = [store.work.add_task_message(TaskMessage(task_id="t_1", role=role, content=role,
                                              created_at=NOW)).id
           for role in ("agent", "system", "distilled", "agent")]
    assert store.work.count_task_messages("t_1") == 4
    assert store.work.count_task_messages("t_1", after=ids[2]) == 1
    assert store.work.count_task_messages("t_1", roles=["agent", "system"]) == 3
    assert store.work.count_task_messages("t_1", after=ids[0], roles=["distilled"]) == 1
    assert store.work.count_task_messages("nope") == 0


def test_one_transaction_spans_the_core_and_every_part(store: Store) -> None:
    from memoryd.models import Memory
    from memoryd.store.base import Actor

    memory = Memory(id="m_1", content="written with the task", created_at=NOW, updated_at=NOW)

    def write_everything() -> None:
        store.work.save_task(task())
        store.bookkeeping.set_watermark("capture:s", 3)
        store.domains.set_domain_threshold(0.4)
        store.insert([memory], None, Actor("test"))

    with pytest.raises(RuntimeError), store.transaction():
        write_everything()
        raise RuntimeError("boom")
    assert store.work.get_task("t_1") is None and store.bookkeeping.get_watermark("capture:s") == 0
    assert store.domains.domain_threshold() is None and store.get("m_1") is None
    with store.transaction():
        write_everything()
    assert store.work.get_task("t_1") is not None and store.get("m_1") is not None
    assert store.bookkeeping.get_watermark("capture:s") == 3
    assert store.domains.domain_threshold() == pytest.approx(0.4)
