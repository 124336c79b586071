"""memoryd's data models, one per concept: the building blocks (``fields``), a memory
(``memory``), search (``search``), links (``graph``), intentions (``intentions``), tasks
(``tasks``), smart waits (``waits``), domains (``domains``) and reports (``reports``). Input
models of the operations derive from these (``derive.pick``).
"""

from memoryd.models.domains import (
    Domain,
    DomainProposal,
    DomainsReport,
    ProposalKind,
    ProposalStatus,
)
from memoryd.models.fields import (
    NODE_TYPES,
    TIMEFRAMES,
    DomainName,
    Importance,
    Metadata,
    NodeType,
    Scope,
    Severity,
    Strict,
    Tags,
    Tier,
    Timeframe,
    UTCDateTime,
    as_utc,
    check_domain_name,
    check_json,
    check_scope,
    utcnow,
)
from memoryd.models.graph import (
    EDGE_TYPES,
    Edge,
    EdgeType,
    GraphFileState,
    Neighbour,
    Neighbourhood,
)
from memoryd.models.intentions import Intention, IntentionStatus, IntentionTrigger, Priority
from memoryd.models.memory import (
    HistoryEntry,
    IngestDecision,
    IngestResult,
    Memory,
    MemoryFields,
    MemoryPatch,
    MemoryStateReport,
    NewMemory,
    RestoredMemory,
    SchedulingState,
)
from memoryd.models.reports import (
    ApiKey,
    CodebaseContext,
    ConsolidationReport,
    GcReport,
    StoreStats,
)
from memoryd.models.search import FILTER_NAMES, KeywordHit, SearchFilters, SearchHit, VectorHit
from memoryd.models.tasks import (
    MESSAGE_KINDS,
    TASK_STATUSES,
    MessageKind,
    MessageRole,
    PlanStep,
    Task,
    TaskFields,
    TaskMessage,
    TaskOutcome,
    TaskReport,
    TaskStatus,
)
from memoryd.models.waits import WAIT_STATES, WaitInfo, WaitState

__all__ = [
    "EDGE_TYPES", "FILTER_NAMES", "MESSAGE_KINDS", "NODE_TYPES", "TASK_STATUSES", "TIMEFRAMES",
    "WAIT_STATES", "ApiKey", "CodebaseContext", "ConsolidationReport", "Domain", "DomainName",
    "DomainProposal", "DomainsReport", "Edge", "EdgeType", "GcReport", "GraphFileState",
    "HistoryEntry", "Importance", "IngestDecision", "IngestResult", "Intention",
    "IntentionStatus", "IntentionTrigger", "KeywordHit", "Memory", "MemoryFields",
    "MemoryPatch", "MemoryStateReport", "MessageKind", "MessageRole", "Metadata", "Neighbour",
    "Neighbourhood", "NewMemory", "NodeType", "PlanStep", "Priority", "ProposalKind",
    "ProposalStatus", "RestoredMemory", "SchedulingState", "Scope", "SearchFilters",
    "SearchHit", "Severity", "StoreStats", "Strict", "Tags", "Task", "TaskFields",
    "TaskMessage", "TaskOutcome", "TaskReport", "TaskStatus", "Tier", "Timeframe",
    "UTCDateTime", "VectorHit", "WaitInfo", "WaitState", "as_utc", "check_domain_name",
    "check_json", "check_scope", "utcnow",
]
