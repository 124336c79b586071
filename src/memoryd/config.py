"""Settings: ``MEMORYD_*`` environment variables over an optional TOML file.

Precedence, highest first: arguments passed in code, environment variables,
the config file (``$MEMORYD_CONFIG`` or ``$XDG_CONFIG_HOME/memoryd/config.toml``),
then the defaults below. Only composition roots (``memoryd.open``, the CLI, the
server factory) read settings; everything else receives them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from memoryd.models.fields import check_scope
from memoryd.retrieval.bm25 import DEFAULT_B, DEFAULT_K1
from memoryd.retrieval.answer import DEFAULT_RECALL_THRESHOLD


def default_home() -> Path:
    """The XDG data directory for memoryd (``~/.local/share/memoryd`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memoryd"


def config_file_path() -> Path:
    """Where the optional TOML config file is read from."""
    explicit = os.environ.get("MEMORYD_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memoryd" / "config.toml"


class Settings(BaseSettings):
    """Every tunable of memoryd, with the defaults the benchmarks support."""

    # An empty MEMORYD_* variable counts as unset (MEMORYD_HOME="" would otherwise put the store
    # in the current directory).
    model_config = SettingsConfigDict(env_prefix="MEMORYD_", extra="ignore", env_ignore_empty=True)

    home: Path = Field(default_factory=default_home, description="Data directory.")
    store_url: str | None = Field(
        default=None, description="sqlite:///path.db or postgresql://...; default: HOME/memoryd.db"
    )

    # Embeddings
    # onnx: all-MiniLM-L6-v2 (int8) on ONNX Runtime; local: the same model on torch.
    embedder: Literal["local", "onnx", "fastembed", "openai", "ollama"] = "onnx"
    embed_model: str | None = Field(default=None, description="Model name for the provider.")
    embed_url: str | None = Field(default=None, description="Base URL of an HTTP embedder.")
    embed_api_key: SecretStr | None = None
    embed_dims: int | None = Field(default=None, description="Dimensions of an HTTP model.")
    embed_batch_size: int = Field(default=64, ge=1, le=4096)

    # Writes
    max_content_bytes: int = Field(default=64 * 1024, ge=16)

    # Retrieval (docs/ranking.md; measured in bench/results/recall_sets.md and recall_engine.md)
    # relevance: every candidate's P(relevant) from a model over both sides' evidence (the
    # fusion and the score in one); rrf: reciprocal rank fusion (rrf_k and the weights).
    fusion: Literal["relevance", "rrf"] = "relevance"
    bm25_k1: float = Field(default=DEFAULT_K1, ge=0.0, le=100.0, description="BM25 saturation.")
    bm25_b: float = Field(default=DEFAULT_B, ge=0.0, le=1.0, description="BM25 length norm.")
    candidate_pool: int = Field(default=50, ge=1, le=2000)
    # Hits at least this likely relevant go into recall blocks; search and tier widening
    # count them as relevant.
    recall_threshold: float = Field(default=DEFAULT_RECALL_THRESHOLD, ge=0.0, le=1.0)
    rrf_k: int = Field(default=5, ge=1, description="RRF constant (fusion = rrf).")
    keyword_weight: float = Field(default=1.0, ge=0.0, description="RRF weight (fusion = rrf).")
    vector_weight: float = Field(default=2.0, ge=0.0, description="RRF weight (fusion = rrf).")
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    hnsw_threshold: int = Field(
        default=20_000, ge=0, description="Above this many vectors, search an HNSW graph."
    )
    hnsw_ef_search: int = Field(default=128, ge=8)
    keyword_index: bool = Field(
        default=True, description="Keep a copy of the keyword postings in memory for the "
        "first pass of keyword search (the SQL computes it otherwise; same ranking).")

    # Cognitive ranking: retention, recency and importance (blended by these weights) break
    # the ties left after relevance and cosine, and reorder hits whose relevance log-odds are
    # within rank_close_margin of each other (0: ties only).
    cognitive_ranking: bool = True
    rank_close_margin: float = Field(default=0.0, ge=0.0, le=5.0)  # ranking.DEFAULT_CLOSE_MARGIN
    # A memory created (or valid from) inside the period a query names ("last week", "in May",
    # "March 3") gains this much log-odds over the others: it reorders near-ties, never a
    # clearly more relevant hit below it. 0 turns time expressions off. (0.5: at 1.0 it cost
    # a BEAM question; bench/results/recall_engine.md.)
    time_window_margin: float = Field(default=0.5, ge=0.0, le=5.0)
    # A memory said by the party a query asks about ("what did I say…", "what did you
    # suggest…", "what did Caroline tell…") gains this much log-odds, the same bounded
    # near-tie reorder. 0 turns speaker cues off.
    speaker_margin: float = Field(default=1.0, ge=0.0, le=5.0)
    # A request for advice or action ("how would you suggest…", "can you recommend…") lifts
    # the user's preferences and standing instructions that score at least recall_threshold
    # by this much log-odds, the same bounded reorder. 0 turns it off. (0.5: at 1.0 it cost
    # an agent-memory question; bench/results/recall_engine.md.)
    preference_margin: float = Field(default=0.5, ge=0.0, le=5.0)
    rank_retention_weight: float = Field(default=0.05, ge=0.0)
    rank_recency_weight: float = Field(default=0.05, ge=0.0)
    rank_importance_weight: float = Field(default=0.05, ge=0.0)
    recency_half_life_days: float = Field(default=30.0, gt=0.0)
    # Tiers: search hot first, widen to warm and cold while fewer than this many relevant hits.
    tier_min_results: int = Field(default=3, ge=0)
    # Spreading activation over edges.
    activation: bool = True
    activation_decay: float = Field(default=0.7, gt=0.0, le=1.0)
    activation_hops: int = Field(default=2, ge=0, le=5)
    activation_threshold: float = Field(default=0.1, ge=0.0, le=1.0)
    activation_seeds: int = Field(default=3, ge=0)
    # Writes: automatic edges and secret scanning.
    link_similarity: float = Field(default=0.6, ge=0.0, le=1.0)
    link_max: int = Field(default=3, ge=0)
    secrets_mode: Literal["refuse", "redact", "allow"] = "refuse"
    # Smart-ingest gate thresholds (cosine similarity); unset = the defaults that
    # cognition/gating.py documents and bench/results/gating.md measures.
    gate_reinforce: float | None = Field(default=None, ge=0.0, le=1.0)
    gate_update: float | None = Field(default=None, ge=0.0, le=1.0)
    gate_supersede: float | None = Field(default=None, ge=0.0, le=1.0)
    gate_merge: float | None = Field(default=None, ge=0.0, le=1.0)
    # Consolidation schedule in minutes; None (the default) = only on demand.
    consolidate_every_minutes: float | None = Field(default=None, gt=0)
    # Emergent domains (docs/domains.md): discovery runs by itself, off the write path, once
    # the store holds domains_min_memories memories (unless domains_auto is off); every
    # domains_recluster_every-th consolidation re-clusters and records proposals (0 = never).
    domains_auto: bool = True
    domains_min_memories: int = Field(default=150, ge=10)
    domains_recluster_every: int = Field(default=5, ge=0)

    # Server
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    allow_anonymous: bool = False
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    # Host headers /mcp accepts (DNS-rebinding protection); loopback names are always allowed.
    # Env: comma-separated, e.g. MEMORYD_ALLOWED_HOSTS="memoryd.lan:*,10.0.0.5:8765".
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Browser origins allowed by CORS; empty (the default) = CORS off.
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Who may write into a project's scope besides the keys bound to it and unbound keys: the
    # agents listed for that project (docs/security.md, "Who may write where"). Env:
    # MEMORYD_PROJECT_WRITERS="alpha=bot-1,alpha=bot-2,beta=bot-3" or a JSON object.
    project_writers: Annotated[dict[str, list[str]], NoDecode] = Field(default_factory=dict)
    # Gateway recall defaults.
    recall_token_budget: int = Field(default=1500, ge=50, le=100_000)
    recall_max_items: int = Field(default=6, ge=1, le=50)
    # Optional OpenAI-compatible chat endpoint that extracts memories for capture/flush;
    # unset (the default) = the built-in heuristics, no LLM.
    llm_url: str | None = Field(default=None, description="Base URL, e.g. http://127.0.0.1:11434/v1")
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout: float = Field(default=30.0, gt=0)
    # `memoryd mcp` (stdio): load the embedding model in the background after start-up.
    mcp_warm: bool = True
    # Answer searches from the keyword side while the embedding model is still loading, instead
    # of waiting for it (`memoryd mcp` turns this on: a client's first call should be quick).
    keyword_while_model_loads: bool = False
    # With keyword_while_model_loads: how long a search waits for the model before answering
    # from keywords (the default ONNX model loads in about half a second).
    model_wait_seconds: float = Field(default=2.0, ge=0.0, le=60.0)
    # The MCP tools offered: a comma list of profiles (memory, kg, tasks, admin, openclaw,
    # vestige, full) and tool names; see memoryd.operations.profiles.
    mcp_tools: str = "memory"

    # Task memory: a running summary every N messages, within a token budget; "llm" writes
    # it with the chat endpoint above (llm_url/llm_model) instead of extracting it.
    task_summary_every: int = Field(default=5, ge=1, le=1000)
    task_summary_tokens: int = Field(default=300, ge=30, le=4000)
    task_distiller: Literal["extractive", "llm"] = "extractive"

    # Smart waits (docs/waits.md). Everything that reaches beyond files under the home
    # directory is off until set here.
    wait_runner: str | None = Field(default=None, description="This host's name for its waits "
                                    "(default: the host name).")
    wait_allowed_roots: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Directories file waits may watch (default: home).")
    wait_allow_spawn: bool = False
    wait_allow_link_local: bool = False
    wait_display: str | None = Field(default=None, description="X display of screen waits.")
    wait_tmux_socket: str | None = None
    wait_max_watching: int = Field(default=200, ge=1, le=10_000)
    wait_max_blocking: int = Field(default=16, ge=1, le=256,
                                   description="Long-polls that may block at once.")
    wait_vision_url: str | None = Field(default=None, description="OpenAI-compatible base URL "
                                       "of a vision model, e.g. http://127.0.0.1:11434/v1")
    wait_vision_model: str | None = None
    wait_vision_api_key: SecretStr | None = None
    wake_openclaw_url: str | None = None
    wake_openclaw_token: SecretStr | None = None
    wake_openclaw_session_key: str = "agent:main:main"
    wake_webhook_url: str | None = None
    wake_webhook_secret: SecretStr | None = None
    # System activity as system.* memories (every source off by default).
    activity_processes: bool = False
    activity_process_rss_mb: float = Field(default=2048.0, gt=0)
    activity_process_cpu_percent: float = Field(default=90.0, gt=0)
    activity_swap: bool = False
    activity_swap_percent: float = Field(default=80.0, gt=0, le=100)
    activity_disk: bool = False
    activity_disk_percent: float = Field(default=90.0, gt=0, le=100)
    activity_log_files: Annotated[list[str], NoDecode] = Field(default_factory=list)
    activity_interval_s: float = Field(default=10.0, ge=1.0)
    activity_scope: str = "user"

    # Knowledge graphs (docs/knowledge-graphs.md): the core's token budget and counter,
    # archival weights (measured in bench/results/kgraph.md), the orphans' grace period.
    kg_budget: int = Field(default=5000, ge=16, le=200_000)
    kg_token_counter: Literal["cl100k", "minilm", "estimate"] = "cl100k"
    kg_weight_recency: float = Field(default=0.8, ge=0.0)
    kg_weight_connectivity: float = Field(default=0.1, ge=0.0)
    kg_weight_files: float = Field(default=0.1, ge=0.0)
    kg_weight_usage: float = Field(default=0.0, ge=0.0)
    kg_half_life_days: float = Field(default=14.0, gt=0.0)
    kg_degree_cap: int = Field(default=6, ge=1)
    kg_archive_fraction: float = Field(default=0.2, gt=0.0, le=1.0)
    kg_orphan_grace_days: float = Field(default=30.0, ge=0.0)
    # Mirror graphs to <project>/.knowledge/graph.json and HOME/knowledge/user.json.
    kg_files: bool = True
    kg_allowed_roots: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Directories under which a key bound to a scope or "
        "agent may name a project by its root directory (default: none; such keys name "
        "projects by name).")
    # A rendered core is reused while nothing changed, for at most this long (recency moves).
    kg_cache_seconds: float = Field(default=60.0, ge=0.0)

    @field_validator("allowed_hosts", "allowed_origins", "cors_origins", "wait_allowed_roots",
                     "kg_allowed_roots", "activity_log_files", mode="before")
    @classmethod
    def _split_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip()
            if value.startswith("["):
                import json

                return json.loads(value)
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("project_writers", mode="before")
    @classmethod
    def _writers(cls, value: Any) -> Any:
        return parse_project_writers(value)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=config_file_path())
        return (init_settings, env_settings, toml)

    @model_validator(mode="after")
    def _llm_distiller_needs_a_model(self) -> Settings:
        if self.task_distiller == "llm" and not (self.llm_url and self.llm_model):
            raise ValueError("task_distiller = 'llm' needs llm_url and llm_model")
        check_scope(self.activity_scope)
        return self

    @property
    def resolved_store_url(self) -> str:
        """The store URL, defaulting to the SQLite file under ``home``."""
        if self.store_url:
            return self.store_url
        return f"sqlite:///{(self.home / 'memoryd.db').resolve()}"

    def masked(self) -> dict[str, Any]:
        """Effective settings as plain values, secrets masked (for ``memoryd config``)."""
        out: dict[str, Any] = {}
        for name, value in self.model_dump().items():
            if isinstance(getattr(self, name), SecretStr):
                value = "********" if getattr(self, name).get_secret_value() else ""
            elif isinstance(value, Path):
                value = str(value)
            elif isinstance(value, str) and "://" in value:
                value = mask_url_password(value)
            out[name] = value
        out["resolved_store_url"] = mask_url_password(self.resolved_store_url)
        out["config_file"] = str(config_file_path())
        return out


def parse_project_writers(value: Any) -> dict[str, list[str]]:
    """``{project: [agent, ...]}`` from a mapping, a JSON object or ``project=agent,...``; a
    project name that is not valid, or an agent id that is blank, is a ValueError."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            import json

            value = json.loads(text)
        else:
            pairs: dict[str, list[str]] = {}
            for entry in filter(None, (part.strip() for part in text.split(","))):
                project, sep, agent = entry.partition("=")
                if not sep:
                    raise ValueError(f"project_writers entry {entry[:70]!r} is not project=agent")
                pairs.setdefault(project.strip(), []).append(agent.strip())
            value = pairs
    if not isinstance(value, dict):
        raise ValueError("project_writers must map project names to lists of agent ids")
    out: dict[str, list[str]] = {}
    for project, agents in value.items():
        check_scope(f"project:{project}")
        names = [agents] if isinstance(agents, str) else list(agents)
        if not names or not all(isinstance(a, str) and a.strip() == a and a for a in names):
            raise ValueError(f"project_writers[{project!r}]: agent ids must be non-blank strings")
        out[project] = names
    return out


def mask_url_password(url: str) -> str:
    """Hide credentials in a URL: the password of ``user:pass@`` (or a lone token in the
    userinfo) and the values of password/key/token/secret query parameters."""
    if "://" not in url:
        return url
    scheme, rest = url.split("://", 1)
    if "@" in rest.split("/", 1)[0] or ("@" in rest and "?" not in rest.split("@", 1)[0]):
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0] if ":" in creds else ""
        rest = f"{user}:********@{host}" if user else f"********@{host}"
    rest = re.sub(
        r"(?i)([?&](?:password|passwd|pwd|api_key|apikey|key|token|secret|access_token)=)[^&#]*",
        r"\1********",
        rest,
    )
    return f"{scheme}://{rest}"
