"""Settings: ``MEMORYD_*`` environment variables over an optional TOML file.

Precedence, highest first: arguments passed in code, environment variables,
the config file (``$MEMORYD_CONFIG`` or ``$XDG_CONFIG_HOME/memoryd/config.toml``),
then the defaults below. Only composition roots (``memoryd.open``, the CLI, the
server factory) read settings; everything else receives them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


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

    model_config = SettingsConfigDict(env_prefix="MEMORYD_", extra="ignore")

    home: Path = Field(default_factory=default_home, description="Data directory.")
    store_url: str | None = Field(
        default=None, description="sqlite:///path.db or postgresql://...; default: HOME/memoryd.db"
    )

    # Embeddings
    embedder: Literal["local", "fastembed", "openai", "ollama"] = "local"
    embed_model: str | None = Field(default=None, description="Model name for the provider.")
    embed_url: str | None = Field(default=None, description="Base URL of an HTTP embedder.")
    embed_api_key: SecretStr | None = None
    embed_dims: int | None = Field(default=None, description="Dimensions of an HTTP model.")
    embed_batch_size: int = Field(default=64, ge=1, le=4096)

    # Writes
    max_content_bytes: int = Field(default=64 * 1024, ge=16)

    # Retrieval
    rrf_k: int = Field(default=60, ge=1)
    keyword_weight: float = Field(default=1.0, ge=0.0)
    vector_weight: float = Field(default=1.0, ge=0.0)
    candidate_pool: int = Field(default=50, ge=1, le=2000)
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    hnsw_threshold: int = Field(
        default=20_000, ge=0, description="Above this many vectors, search an HNSW graph."
    )
    hnsw_ef_search: int = Field(default=128, ge=8)

    # Server
    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=1, le=65535)
    allow_anonymous: bool = False
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)

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
            elif name == "store_url" and value and "@" in value:
                value = _mask_url_password(value)
            out[name] = value
        out["resolved_store_url"] = _mask_url_password(self.resolved_store_url)
        out["config_file"] = str(config_file_path())
        return out


def _mask_url_password(url: str) -> str:
    """Hide the password of ``scheme://user:pass@host`` URLs."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    if ":" in creds:
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:********@{host}"
    return url
