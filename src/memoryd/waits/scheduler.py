"""The wait scheduler: one thread multiplexing every wait job.

Jobs sit in a priority queue ordered by when they are next due. The thread sleeps in a
``selectors`` call until the earliest job is due or a watched descriptor turns readable
(pty output, a pidfd on exit, a judged frame, a new or cancelled job), checks the due
jobs, and re-queues each at the interval its polling ladder gives (see
:mod:`memoryd.waits.policy`). Frames go to the :class:`~memoryd.waits.judge.FrameJudge`
thread; wakes to the :class:`~memoryd.waits.wake.WakeDispatcher` thread; neither blocks
the loop. Idle cost is bounded by the ladders: a static text wait is checked once a
second, a static screen every 15 s.

The public methods are the operations a face needs::

    sched = WaitScheduler(policy=WaitPolicy(), jobs=JsonFileJobStore(path)); sched.start()
    job = sched.submit(WaitRequest("file:/home/me/build.log", "/BUILD (OK|FAILED)/", 600))
    sched.status(job.id, block_s=30)   # long-poll: returns when final or after 30 s
    sched.list(); sched.cancel(job.id); sched.close()
"""

from __future__ import annotations

import heapq
import itertools
import os
import selectors
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from memoryd.waits.criteria import parse_criteria
from memoryd.waits.errors import InvalidWait, MemorydError, WaitNotFound
from memoryd.waits.judge import FrameJudge, Judgement, JudgeRequest
from memoryd.waits.model import Observation, Verdict, WaitJob, WaitStatus, WakeAttempt
from memoryd.waits.persistence import JobStore, MemoryJobStore
from memoryd.waits.policy import WaitPolicy, next_interval
from memoryd.waits.targets import parse_target
from memoryd.waits.validate import check_request, check_wake
from memoryd.waits.wake import WakeDispatcher
from memoryd.waits.watchers import Watcher, WatcherKit, build_watcher
from memoryd.waits.watchers.screen import ScreenWatcher

SAVE_EVERY_S = 5.0  # cursor and last observation are persisted at most this often per job
KEEP_FINISHED = 1000  # finished jobs kept in memory for status/list (all stay in the store)
MIN_FD_GAP_S = 0.02  # a descriptor that stays readable cannot make the loop spin


@dataclass(frozen=True)
class WaitRequest:
    """What ``smart_wait`` receives (validated by :meth:`WaitScheduler.submit`)."""

    target: str
    criteria: str | Mapping[str, Any]
    timeout_s: float
    task_id: str | None = None
    wake: Mapping[str, Any] | None = None
    owner: Mapping[str, Any] = field(default_factory=dict)

    @property
    def confined(self) -> bool:
        """Whether the owner is a key bound to a scope or agent (``owner["confined"]``)."""
        return bool(self.owner.get("confined"))


@dataclass
class _Live:
    """The scheduler-thread state of a watching job."""

    watcher: Watcher
    ladder: Any
    due: float = 0.0
    last_change: float = field(default_factory=time.monotonic)
    burst_until: float = 0.0
    last_check: float = 0.0
    saved_at: float = 0.0
    fd: int | None = None


class WaitScheduler:
    """Runs every wait job on one thread (see the module docstring)."""

    def __init__(self, *, policy: WaitPolicy | None = None, jobs: JobStore | None = None,
                 kit: WatcherKit | None = None, judge: FrameJudge | None = None,
                 wake: WakeDispatcher | None = None) -> None:
        self.policy = policy or WaitPolicy()
        self._persist = jobs or MemoryJobStore()
        self.kit = kit or WatcherKit(self.policy)
        self.judge, self.wake = judge, wake
        self._jobs: dict[str, WaitJob] = {}
        self._live: dict[str, _Live] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._inbox: list[Callable[[], None]] = []
        self._periodic: dict[str, tuple[Callable[[], None], float]] = {}
        self._cond = threading.Condition()
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._thread: threading.Thread | None = None
        self._stopping = False

    # ------------------------------------------------------------------ public operations

    def start(self) -> None:
        """Load persisted jobs, resume the watching ones, and start the loop thread."""
        with self._cond:
            for job in self._persist.load():
                self._jobs[job.id] = job
            self._forget_old_finished()
        for job in [j for j in self._jobs.values() if j.status is WaitStatus.WATCHING]:
            self._resume(job)
        self._thread = threading.Thread(target=self._loop, name="memoryd-waits", daemon=True)
        self._thread.start()

    def submit(self, request: WaitRequest) -> WaitJob:
        """Validate, build the watcher, record the job and start watching; returns at once.

        Raises :class:`InvalidWait` (nothing started) for a bad target, criteria, timeout,
        wake route or a target that does not exist.
        """
        target, criteria, timeout = check_request(request.target, request.criteria,
                                                  request.timeout_s, self.policy,
                                                  confined=request.confined)
        wake = self._check_wake(request.wake)
        with self._cond:
            if sum(1 for j in self._jobs.values() if not j.status.final) >= self.policy.max_watching:
                raise InvalidWait("target", f"{self.policy.max_watching} waits are already watching")
        watcher = build_watcher(target, criteria, self.kit, confined=request.confined)
        now = time.time()
        job = WaitJob(id="w_" + uuid.uuid4().hex[:12], target=target.raw,
                      criteria=criteria.to_dict(), timeout_s=timeout, created_at=now,
                      deadline=now + timeout, updated_at=now, task_id=request.task_id,
                      wake=wake, owner=dict(request.owner), cursor=watcher.cursor())
        try:
            self._persist.save(job)
        except BaseException:
            watcher.close(final=True)  # nothing may keep running for a job never recorded
            raise
        with self._cond:
            self._jobs[job.id] = job
        self._post(lambda: self._enter(job.id, watcher, target.ladder))
        return job

    def status(self, job_id: str, block_s: float = 0.0) -> WaitJob:
        """The job; with ``block_s`` > 0, wait up to that long for it to end first."""
        deadline = time.monotonic() + max(0.0, block_s)
        with self._cond:
            while True:
                job = self._jobs.get(job_id)
                if job is None:
                    raise WaitNotFound(job_id)
                left = deadline - time.monotonic()
                if job.status.final or left <= 0:
                    return job
                self._cond.wait(left)

    def list(self, status: WaitStatus | str | None = None,
             owner: Callable[[WaitJob], bool] | None = None) -> list[WaitJob]:
        """Jobs, newest first, optionally of one status and passing an ``owner`` filter."""
        wanted = WaitStatus(status) if status else None
        with self._cond:
            jobs = [j for j in self._jobs.values()
                    if (wanted is None or j.status is wanted) and (owner is None or owner(j))]
        return sorted(jobs, key=lambda j: j.created_at, reverse=True)

    def cancel(self, job_id: str) -> WaitJob:
        """Stop watching; a job that already ended is returned unchanged."""
        with self._cond:
            job = self._jobs.get(job_id)
            if job is None:
                raise WaitNotFound(job_id)
            if job.status.final:
                return job
        job = self._finish(job_id, WaitStatus.CANCELLED, "cancelled", None)
        return job

    def get(self, job_id: str) -> WaitJob | None:
        """The job as this scheduler knows it (None when it never ran here)."""
        with self._cond:
            return self._jobs.get(job_id)

    def adopt(self, job: WaitJob) -> None:
        """Start running a job that was recorded elsewhere (another process saved it as
        watching): resumed from its cursor, like a job loaded at start."""
        def enter() -> None:
            with self._cond:
                if job.id in self._jobs:
                    return
                self._jobs[job.id] = job
            self._resume(job)

        self._post(enter)

    def add_periodic(self, name: str, fn: Callable[[], None], interval_s: float) -> None:
        """Run ``fn`` every ``interval_s`` seconds on the loop (system activity sources)."""
        self._post(lambda: self._schedule_periodic(name, fn, interval_s))

    def close(self) -> None:
        """Stop the loop; watching jobs keep their status and cursor for the next start."""
        if self._thread is None:
            self._stop()
        else:
            self._post(self._stop)
            self._thread.join(timeout=30)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
        self._selector.close()
        self.kit.close()

    # ------------------------------------------------------------------ loop

    def _post(self, action: Callable[[], None]) -> None:
        with self._cond:
            self._inbox.append(action)
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass  # the pipe is full or closed: the loop wakes anyway

    def _loop(self) -> None:
        while not self._stopping:
            timeout = max(0.0, self._heap[0][0] - time.monotonic()) if self._heap else 5.0
            for key, _ in self._selector.select(min(timeout, 5.0)):
                if key.data is None:
                    try:
                        os.read(self._wake_r, 4096)
                    except BlockingIOError:
                        pass
                else:
                    self._fd_ready(key.data)
            with self._cond:
                actions, self._inbox = self._inbox, []
            for action in actions:
                action()
            self._run_due()

    def _run_due(self) -> None:
        now = time.monotonic()
        while self._heap and self._heap[0][0] <= now and not self._stopping:
            due, _, key = heapq.heappop(self._heap)
            if key in self._periodic:
                self._run_periodic(key, due)
                continue
            live = self._live.get(key)
            if live is not None and live.due == due:
                self._check(key, live)

    def _schedule(self, job_id: str, live: _Live, delay: float) -> None:
        job = self._jobs.get(job_id)
        wall_left = job.deadline - time.time() if job is not None else 0.0
        live.due = time.monotonic() + max(0.0, min(delay, wall_left))
        heapq.heappush(self._heap, (live.due, next(self._seq), job_id))

    def _fd_ready(self, job_id: str) -> None:
        live = self._live.get(job_id)
        if live is None or live.fd is None:
            return
        self._selector.unregister(live.fd)
        live.fd = None
        delay = max(0.0, live.last_check + MIN_FD_GAP_S - time.monotonic())
        self._schedule(job_id, live, delay)

    def _watch_fd(self, job_id: str, live: _Live) -> None:
        fd = live.watcher.wake_fd()
        if fd is not None and live.fd is None:
            self._selector.register(fd, selectors.EVENT_READ, job_id)
            live.fd = fd

    # ------------------------------------------------------------------ jobs

    def _enter(self, job_id: str, watcher: Watcher, ladder_name: str) -> None:
        job = self._jobs.get(job_id)
        if job is None or job.status.final:  # cancelled before the loop saw it
            watcher.close(final=True)
            return
        live = _Live(watcher, self.policy.ladders[ladder_name])
        self._live[job_id] = live
        self._schedule(job_id, live, 0.0)

    def _resume(self, job: WaitJob) -> None:
        if time.time() >= job.deadline:
            self._finish(job.id, WaitStatus.TIMEOUT, job.result, None)
            return
        try:
            target = parse_target(job.target)
            watcher = build_watcher(target, parse_criteria(job.criteria), self.kit, job.cursor,
                                    confined=bool(job.owner.get("confined")))
        except MemorydError as exc:
            self._finish(job.id, WaitStatus.ERROR, f"could not resume: {exc}", None)
            return
        self._enter(job.id, watcher, target.ladder)

    def _check(self, job_id: str, live: _Live) -> None:
        if self._stopping:
            return
        try:
            obs = live.watcher.check()
        except Exception as exc:  # noqa: BLE001 - one broken watcher must not stop the loop
            obs = Observation(ended=True, error=f"{type(exc).__name__}: {exc}")
        live.last_check = time.monotonic()
        if obs.frame is not None:
            self._send_frame(job_id, live, obs)
            obs = replace(obs, frame=None)
        self._apply(job_id, live, obs)

    def _apply(self, job_id: str, live: _Live, obs: Observation) -> None:
        job = self._jobs.get(job_id)
        if job is None or job.status.final:  # cancelled meanwhile
            return
        now = time.monotonic()
        if obs.changed:
            live.last_change = now
        if obs.verdict is Verdict.PARTIAL:
            live.burst_until = now + live.ladder.burst_s
        if obs.matched:
            self._finish(job_id, WaitStatus.RESOLVED, obs.seen, obs)
        elif obs.ended:
            self._finish(job_id, WaitStatus.ERROR, obs.error or obs.seen, obs)
        elif time.time() >= job.deadline:
            self._finish(job_id, WaitStatus.TIMEOUT, self._last_seen(job_id, obs), obs)
        else:
            self._progress(job_id, live, obs)
            delay = next_interval(live.ladder, since_change_s=now - live.last_change,
                                  changed=obs.changed, bursting=now < live.burst_until)
            self._schedule(job_id, live, delay)
            self._watch_fd(job_id, live)

    def _last_seen(self, job_id: str, obs: Observation) -> str | None:
        if obs.seen:
            return obs.seen
        last = self._jobs[job_id].last_observation
        return last.seen if last else None

    def _progress(self, job_id: str, live: _Live, obs: Observation) -> None:
        with self._cond:
            job = self._jobs[job_id]
            keep = obs if (obs.changed or obs.seen or job.last_observation is None) else None
            job = replace(job, checks=job.checks + 1,
                          last_observation=keep or job.last_observation)
            self._jobs[job_id] = job
        now = time.monotonic()
        if now - live.saved_at >= SAVE_EVERY_S:
            cursor = live.watcher.cursor()
            if cursor != job.cursor or obs.changed:
                with self._cond:
                    job = self._jobs[job_id] = job.evolve(cursor=cursor)
                self._persist.save(job)
            live.saved_at = now

    def _finish(self, job_id: str, status: WaitStatus, result: str | None,
                obs: Observation | None) -> WaitJob:
        live = self._live.pop(job_id, None)
        with self._cond:
            job = self._jobs[job_id]
            if job.status.final:
                return job
            cursor = live.watcher.cursor() if live else job.cursor
            job = job.evolve(status=status, result=result, resolved_at=time.time(),
                             checks=job.checks + (1 if obs else 0), cursor=cursor,
                             last_observation=obs or job.last_observation)
            self._jobs[job_id] = job
            self._forget_old_finished()
        try:
            self._persist.save(job)
        finally:  # long-polls return once the end is recorded (other processes read the store)
            with self._cond:
                self._cond.notify_all()
        if live is not None:
            self._post(lambda: self._retire(live))
        if self.wake is not None and job.wake is not None and status is not WaitStatus.CANCELLED:
            self.wake.send(job, lambda attempt: self._record_wake(job, attempt))
        return job

    def _forget_old_finished(self) -> None:
        finished = [j for j in self._jobs.values() if j.status.final]
        if len(finished) > KEEP_FINISHED:
            finished.sort(key=lambda j: j.resolved_at or j.updated_at)
            for job in finished[: len(finished) - KEEP_FINISHED]:
                del self._jobs[job.id]

    def _retire(self, live: _Live) -> None:
        if live.fd is not None:
            self._selector.unregister(live.fd)
            live.fd = None
        live.watcher.close(final=True)

    def _record_wake(self, job: WaitJob, attempt: WakeAttempt) -> None:
        with self._cond:
            job = self._jobs.get(job.id, job)
            job = replace(job, wake_attempts=job.wake_attempts + (attempt,))
            if job.id in self._jobs:
                self._jobs[job.id] = job
        self._persist.save(job)

    def _check_wake(self, wake: Mapping[str, Any] | None) -> dict[str, Any] | None:
        return check_wake(wake, self.wake.settings.routes if self.wake is not None else ())

    # ------------------------------------------------------------------ frames

    def _send_frame(self, job_id: str, live: _Live, obs: Observation) -> None:
        watcher = live.watcher
        if self.judge is None or not isinstance(watcher, ScreenWatcher):
            if isinstance(watcher, ScreenWatcher):
                watcher.in_flight = False
            return
        criteria = watcher.criteria
        self.judge.submit(JudgeRequest(
            job_id=job_id, frame=obs.frame, ocr=criteria.wants_text,
            condition=criteria.condition, new_text=watcher.new_text,
            done=lambda jid, j: self._post(lambda: self._judged(jid, j))))

    def _judged(self, job_id: str, judgement: Judgement) -> None:
        live = self._live.get(job_id)
        if live is None or not isinstance(live.watcher, ScreenWatcher):
            return
        self._apply(job_id, live, live.watcher.judged(judgement))

    # ------------------------------------------------------------------ periodic + stop

    def _schedule_periodic(self, name: str, fn: Callable[[], None], interval_s: float) -> None:
        key = "periodic:" + name
        self._periodic[key] = (fn, interval_s)
        heapq.heappush(self._heap, (time.monotonic() + interval_s, next(self._seq), key))

    def _run_periodic(self, key: str, due: float) -> None:
        fn, interval = self._periodic[key]
        try:
            fn()
        finally:
            heapq.heappush(self._heap, (max(due + interval, time.monotonic()),
                                        next(self._seq), key))

    def _stop(self) -> None:
        self._stopping = True
        for job_id, live in list(self._live.items()):
            with self._cond:
                job = self._jobs[job_id] = self._jobs[job_id].evolve(cursor=live.watcher.cursor())
            self._persist.save(job)
            live.watcher.close(final=False)
        self._live.clear()
        if self.judge is not None:
            self.judge.close()
        if self.wake is not None:
            self.wake.close()
