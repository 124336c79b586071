"""memoryd's data models, one per concept: the building blocks (``fields``), a memory
(``memory``), search (``search``), links (``graph``), intentions (``intentions``), domains
(``domains``) and reports (``reports``). Input models of the operations derive from these
(``derive.pick``).
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
from memoryd.models.graph import EDGE_TYPES, Edge, EdgeType, Neighbour, Neighbourhood
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

__all__ = [
    "EDGE_TYPES", "FILTER_NAMES", "NODE_TYPES", "TIMEFRAMES", "ApiKey", "CodebaseContext",
    "ConsolidationReport", "Domain", "DomainName", "DomainProposal", "DomainsReport", "Edge",
    "EdgeType", "GcReport", "HistoryEntry", "Importance", "IngestDecision", "IngestResult",
    "Intention", "IntentionStatus", "IntentionTrigger", "KeywordHit", "Memory", "MemoryFields",
    "MemoryPatch", "MemoryStateReport", "Metadata", "Neighbour", "Neighbourhood", "NewMemory",
    "NodeType", "Priority", "ProposalKind", "ProposalStatus", "RestoredMemory",
    "SchedulingState", "Scope", "SearchFilters", "SearchHit", "Severity", "StoreStats",
    "Strict", "Tags", "Tier", "Timeframe", "UTCDateTime", "VectorHit", "as_utc",
    "check_domain_name", "check_json", "check_scope", "utcnow",
]
