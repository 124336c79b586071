"""``memoryd keys``: create, list and revoke the API keys of the HTTP server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from memoryd.cli.common import console, engine_from, print_json

keys_app = typer.Typer(help="Manage API keys (only their hashes are stored).", no_args_is_help=True)


@keys_app.command("create")
def create(
    ctx: typer.Context,
    label: str = typer.Option(..., "--label", "-l", help="Who or what the key is for."),
    scopes: str = typer.Option(
        "read,write", "--scopes", help="Comma-separated: read, write, admin."
    ),
    scope: Optional[str] = typer.Option(
        None, "--scope", help="Bind the key to one memory scope: 'user' or 'project:<name>'."
    ),
    agent: Optional[str] = typer.Option(None, "--agent", help="Bind the key to one agent id."),
    domain: Optional[list[str]] = typer.Option(
        None, "--domain", help="Limit the key to a domain (repeat, or comma-separate, for "
        "several): it sees and writes only memories in them."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Create a key and print it once (store it now: it cannot be shown again)."""
    domains = [d for item in domain or [] for d in item.split(",") if d.strip()] or None
    with engine_from(ctx) as mem:
        made = mem.admin.create_key(label, scopes=scopes.split(","), memory_scope=scope,
                                    agent_id=agent, domains=domains)
    if as_json:
        print_json(
            {
                "id": made.key.id,
                "label": made.key.label,
                "scopes": made.key.scopes,
                "memory_scope": made.key.memory_scope,
                "agent_id": made.key.agent_id,
                "domains": made.key.domains,
                "key": made.secret,
            }
        )
        return
    typer.echo(made.secret)
    binding = (f"; scope {scope}" if scope else "") + (f"; agent {agent}" if agent else "") + (
        f"; domains {','.join(made.key.domains)}" if made.key.domains else "")
    typer.echo(
        f"created key {made.key.id} ({made.key.label}; scopes {','.join(made.key.scopes)}"
        f"{binding}). It is shown only once: store it now.",
        err=True,
    )


@keys_app.command("import")
def import_key(
    ctx: typer.Context,
    label: str = typer.Option(..., "--label", "-l", help="Who or what the key is for."),
    secret_file: Path = typer.Option(..., "--secret-file", help="File holding the key ('-' "
                                     "reads standard input), e.g. a mounted Secret."),
    scopes: str = typer.Option("read,write", "--scopes", help="Comma-separated: read, write, "
                               "admin."),
) -> None:
    """Register a key made elsewhere (mk_...), once: a deployment's Secret becomes a key."""
    text = sys.stdin.read() if str(secret_file) == "-" else secret_file.read_text()
    with engine_from(ctx) as mem:
        key, stored = mem.admin.register_key(label, text.strip(), scopes=scopes.split(","))
    state = "registered" if stored else "already known"
    console.print(f"{state}: key {key.id} ({key.label}; scopes {','.join(key.scopes)})")


@keys_app.command("list")
def list_(ctx: typer.Context, as_json: bool = typer.Option(False, "--json")) -> None:
    """List keys: id, label, prefix, scopes, binding, created, last used, revoked."""
    with engine_from(ctx) as mem:
        records = mem.admin.list_keys()
    if as_json:
        print_json([k.model_dump(mode="json", exclude={"key_hash"}) for k in records])
        return
    table = Table()
    table.add_column("id", no_wrap=True)
    for column in ("label", "prefix", "scopes", "bound to", "created", "last used", "status"):
        table.add_column(column)
    for k in records:
        bound = ", ".join(x for x in (k.memory_scope, k.agent_id and f"agent:{k.agent_id}",
                                      k.domains and f"domains:{','.join(k.domains)}") if x)
        table.add_row(
            k.id,
            k.label,
            k.prefix + "…",
            ",".join(k.scopes),
            bound or "-",
            f"{k.created_at:%Y-%m-%d %H:%M}",
            f"{k.last_used:%Y-%m-%d %H:%M}" if k.last_used else "never",
            "revoked" if k.revoked_at else "active",
        )
    console.print(table)


@keys_app.command("revoke")
def revoke(ctx: typer.Context, key_id: str = typer.Argument(..., help="Key id or prefix.")) -> None:
    """Revoke a key; it stops working immediately."""
    with engine_from(ctx) as mem:
        key = mem.admin.revoke_key(key_id)
    console.print(f"revoked key {key.id} ({key.label})")


def register(app: typer.Typer) -> None:
    """Attach the ``keys`` command group to the app."""
    app.add_typer(keys_app, name="keys")
