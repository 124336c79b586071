"""Backfill: a project's structure as graph nodes (``memoryd kg scan``), and past Claude Code
transcripts and OpenClaw memory files as memories (``memoryd import claude-code|openclaw``).

Readers live in :mod:`memoryd.graph.scan` and :mod:`memoryd.graph.importers`; this module
stores what they read. Imports are idempotent (every item has a stable id; ids already
stored are skipped). An item that looks like a credential is skipped and counted, not
stored, unless the settings redact or allow secrets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from memoryd.engine.checks import new_memory
from memoryd.engine.context import EngineContext
from memoryd.engine.kg.load import GraphCache
from memoryd.engine.kg.targets import parse_project
from memoryd.engine.kg.write import write_nodes
from memoryd.engine.memory.writes import add_many
from memoryd.errors import InvalidInput, SecretDetected
from memoryd.graph.importers import ImportBatch
from memoryd.graph.scan import scan_project
from memoryd.models import NewMemory, check_scope
from memoryd.models.knowledge import BackfillReport, ScanReport


def scan(ctx: EngineContext, cache: GraphCache, root: Path) -> ScanReport:
    """Scan the project at ``root`` and store what it found in the project's graph; scanning
    again updates the same ``scan-…`` nodes."""
    target = parse_project(str(root))
    found = scan_project(target.root or root, now=ctx.clock())
    written = write_nodes(ctx, cache, target, found.nodes, found.edges)
    return ScanReport(**written.model_dump(), files_seen=found.files_seen,
                      truncated=found.truncated, warnings=found.warnings)


def check_scope_given(scope: str | None) -> None:
    """InvalidInput for a scope an import was told to use that is not one (checked before any
    file is read, whether or not a file holds an item)."""
    if scope is None:
        return
    try:
        check_scope(scope)
    except ValueError as exc:
        raise InvalidInput(f"scope: {exc}") from None


def import_batches(ctx: EngineContext, batches: Iterable[ImportBatch],
                   progress: Callable[[int], None] | None = None) -> BackfillReport:
    """Store the items of each batch that are not stored yet (one file at a time)."""
    report = BackfillReport()
    for batch in batches:
        report.files += 1
        report.problems += batch.problems
        items = list({item.id: item for item in batch.items}.values())
        report.items += len(items)
        known = ctx.store.get_many([i.id for i in items if i.id])
        fresh = [i for i in items if i.id not in known]
        report.skipped_existing += len(items) - len(fresh)
        checked = _checked(ctx, fresh, batch.source, report)
        add_many(ctx, checked)
        report.imported += len(checked)
        if progress:
            progress(1)
    return report


def _checked(ctx: EngineContext, items: list[NewMemory], source: Path,
             report: BackfillReport) -> list[NewMemory]:
    out = []
    for item in items:
        try:
            out.append(new_memory(ctx, item))
        except SecretDetected:
            report.skipped_secrets += 1
        except InvalidInput as exc:
            report.problems.append(f"{source}: {exc}")
    return out
