"""``engine.admin``: administration of the whole store — API keys, the audit ledger and
journal, export and import, backup, restore, re-embedding, consolidation, garbage collection,
purging and the health check.

    >>> mem.admin.create_key("home-assistant", scopes=["read"], domains=["home"]).secret
    >>> mem.admin.backup("/backups/memoryd.db")

Every method acts with the engine's caller (``engine.acting_as``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date, tzinfo
from pathlib import Path
from typing import Any, Callable, Iterable

from memoryd import keys as key_format
from memoryd.engine.admin import consolidation, keys, maintenance, transfer
from memoryd.engine.context import EngineContext
from memoryd.engine.domains.auto import AutoDiscovery
from memoryd.engine.views.journal import journal_markdown
from memoryd.ledger import LedgerEntry, LedgerReport
from memoryd.models import ApiKey, ConsolidationReport, GcReport, SearchFilters


class Admin:
    """Keys, ledger, journal and maintenance, over one engine's context."""

    def __init__(self, ctx: EngineContext, auto: AutoDiscovery) -> None:
        self._ctx = ctx
        self._auto = auto

    # --- API keys --------------------------------------------------------
    def create_key(self, label: str, *, scopes: Iterable[str] = ("read", "write"),
                   memory_scope: str | None = None, agent_id: str | None = None,
                   domains: Iterable[str] | None = None) -> key_format.CreatedKey:
        """Make an API key; the secret is in the result and never shown again. ``domains``
        limits it to memories in those domains.

        >>> mem.admin.create_key("home-assistant", scopes=["read"], domains=["home"]).secret
        """
        return keys.create_key(self._ctx, label, scopes=scopes, memory_scope=memory_scope,
                               agent_id=agent_id, domains=domains)

    def register_key(self, label: str, secret: str, *, scopes: Iterable[str] = ("read", "write"),
                     memory_scope: str | None = None, agent_id: str | None = None,
                     domains: Iterable[str] | None = None) -> tuple[ApiKey, bool]:
        """Store a key whose secret was made elsewhere (e.g. a deployment Secret), once; True
        if stored now."""
        return keys.register_key(self._ctx, label, secret, scopes=scopes,
                                 memory_scope=memory_scope, agent_id=agent_id, domains=domains)

    def verify_key(self, secret: str | None) -> ApiKey:
        """The active key for a presented secret; raises InvalidKey."""
        return keys.verify_key(self._ctx, secret)

    def touch_key(self, key: ApiKey) -> bool:
        """Record that a key was used (at most once a minute); True if written."""
        return keys.touch_if_due(self._ctx, key)

    def list_keys(self) -> list[ApiKey]:
        """Every key record (never the secrets), oldest first."""
        return keys.list_keys(self._ctx)

    def revoke_key(self, ident: str) -> ApiKey:
        """Revoke a key by id or prefix; it stops working at once."""
        return keys.revoke_key(self._ctx, ident)

    def has_active_key(self) -> bool:
        """Whether any key is usable."""
        return keys.has_active_key(self._ctx)

    def bound_agents(self) -> set[str]:
        """Agents an active key is bound to."""
        return keys.bound_agents(self._ctx)

    # --- audit ledger and journal ---------------------------------------
    def ledger(self, *, after: int = 0, limit: int = 100) -> list[LedgerEntry]:
        """Ledger entries after position ``after``, oldest first."""
        self._ctx.access.require_unrestricted("the audit ledger")
        return self._ctx.store.ledger_entries(after=after, limit=limit)

    def ledger_head(self) -> LedgerEntry | None:
        """The newest ledger entry: keep its hash elsewhere to detect a cut-off chain."""
        self._ctx.access.require_unrestricted("the audit ledger")
        return self._ctx.store.ledger_head()

    def verify_ledger(self, *, batch_size: int = 5000,
                      progress: Callable[[int], None] | None = None) -> LedgerReport:
        """Re-hash the whole ledger and report the first broken link, if any."""
        return maintenance.verify_ledger(self._ctx, batch_size=batch_size, progress=progress)

    def journal(self, day: date, *, tz: tzinfo | None = None) -> str:
        """What was learned, changed and forgotten on ``day``, as Markdown (midnight to
        midnight in ``tz``, default this machine's zone; purged memories by id only)."""
        self._ctx.access.require_unrestricted("the journal")
        return journal_markdown(self._ctx.store, day, tz)

    # --- export, import, backup -----------------------------------------
    def export_jsonl(self, out: Any, *, filters: SearchFilters | None = None) -> int:
        """Write the memories this engine may see as JSONL; returns how many."""
        return transfer.export_jsonl(self._ctx, out, filters=filters)

    def import_jsonl(self, path: str | Path, *, skip_errors: bool = False, batch_size: int = 256,
                     progress: Callable[[int], None] | None = None) -> transfer.ImportReport:
        """Import a JSONL file of memories (all validated before any is written)."""
        actor = replace(self._ctx.actor, name="import")
        report = transfer.import_jsonl(self._ctx.acting(actor), Path(path),
                                       skip_errors=skip_errors, batch_size=batch_size,
                                       progress=progress)
        self._auto.after_writes(report.imported)
        return report

    def backup(self, path: str | Path) -> Path:
        """Write a consistent copy of the store to ``path`` (the store stays online)."""
        return maintenance.backup(self._ctx, Path(path))

    def restore(self, path: str | Path) -> None:
        """Replace the store's contents with the backup at ``path``."""
        maintenance.restore(self._ctx, Path(path))

    def reembed(self, *, batch_size: int = 256,
                progress: Callable[[int], None] | None = None) -> int:
        """Re-embed every memory with the configured embedder; returns how many."""
        return maintenance.reembed(self._ctx, batch_size=batch_size, progress=progress)

    def health(self) -> dict[str, Any]:
        """A cheap check that the store answers; raises StoreError when it does not. A bound
        caller is not told how many memories the store holds (they span every scope and
        agent, as ``engine.stats()`` does)."""
        data = self._ctx.store.health()
        if self._ctx.access.restricted:
            data.pop("memories", None)
        return data

    # --- consolidation and forgetting ----------------------------------
    def consolidate(self, *, dry_run: bool = False) -> ConsolidationReport:
        """Re-tier, merge near-duplicates, link recent memories; never deletes."""
        return consolidation.consolidate(self._ctx, dry_run=dry_run)

    def schedule_consolidation(self) -> consolidation.ConsolidationSchedule | None:
        """Start consolidating every ``consolidate_every_minutes`` (None when unset); stop
        the returned schedule when the server shuts down."""
        minutes = self._ctx.settings.consolidate_every_minutes
        if minutes is None:
            return None
        ctx = self._ctx
        schedule = consolidation.ConsolidationSchedule(
            lambda: consolidation.consolidate(ctx), minutes)
        schedule.start()
        return schedule

    def gc(self, *, min_retention: float = 0.1, max_age_days: float | None = None,
           dry_run: bool = True) -> GcReport:
        """Delete (or, by default, just list) memories whose retention fell below a floor."""
        return consolidation.gc(self._ctx, min_retention=min_retention,
                                max_age_days=max_age_days, dry_run=dry_run)

    def purge(self, memory_id: str) -> None:
        """Remove a memory for good, scrubbing its content from history too."""
        consolidation.purge(self._ctx, memory_id)
