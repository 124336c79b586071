"""Smart waits: watch a file, terminal, process, URL or screen until a condition holds,
then wake the agent, so it does not spend its context polling.

>>> from memoryd.waits import WaitScheduler, WaitRequest, WaitPolicy
>>> sched = WaitScheduler(policy=WaitPolicy()); sched.start()            # doctest: +SKIP
>>> job = sched.submit(WaitRequest("file:~/build.log", "/BUILD (OK|FAILED)/", 600))  # doctest: +SKIP
>>> sched.status(job.id, block_s=30).status                              # doctest: +SKIP
<WaitStatus.RESOLVED: 'resolved'>

This package is the watcher layer: it imports neither the engine nor a store. Jobs are
persisted through a two-method :class:`JobStore`; see docs/waits.md.
"""

from __future__ import annotations

from memoryd.waits.criteria import Criteria, parse_criteria
from memoryd.waits.diffgate import GateParams
from memoryd.waits.errors import (
    InvalidWait,
    TargetNotAllowed,
    TargetNotFound,
    WaitNotFound,
    WatcherFailed,
)
from memoryd.waits.judge import FrameJudge
from memoryd.waits.model import Observation, Verdict, WaitJob, WaitStatus, WakeAttempt
from memoryd.waits.persistence import (
    CallbackJobStore,
    JobStore,
    JsonFileJobStore,
    MemoryJobStore,
)
from memoryd.waits.policy import LADDERS, PollingLadder, WaitPolicy
from memoryd.waits.scheduler import WaitRequest, WaitScheduler
from memoryd.waits.targets import Target, parse_target
from memoryd.waits.vision import VisionClient, VisionConfig
from memoryd.waits.wake import WakeDispatcher, WakeSettings, wake_message
from memoryd.waits.watchers import WatcherKit

__all__ = [
    "CallbackJobStore",
    "Criteria",
    "FrameJudge",
    "GateParams",
    "InvalidWait",
    "JobStore",
    "JsonFileJobStore",
    "LADDERS",
    "MemoryJobStore",
    "Observation",
    "PollingLadder",
    "Target",
    "TargetNotAllowed",
    "TargetNotFound",
    "Verdict",
    "VisionClient",
    "VisionConfig",
    "WaitJob",
    "WaitNotFound",
    "WaitPolicy",
    "WaitRequest",
    "WaitScheduler",
    "WaitStatus",
    "WakeAttempt",
    "WakeDispatcher",
    "WakeSettings",
    "WatcherFailed",
    "WatcherKit",
    "parse_criteria",
    "parse_target",
    "wake_message",
]
