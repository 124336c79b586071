"""Settings: precedence (code > env > TOML file > defaults), validation, and
``memoryd config`` printing the effective settings with secrets masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from memoryd.config import Settings, config_file_path, default_home

SECRET_KEY = "sk-test-TOPSECRETVALUE0123456789"
DB_PASSWORD = "hunter2-db-password"


def write_toml(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults() -> None:
    s = Settings()
    assert s.max_content_bytes == 64 * 1024
    assert s.embedder == "onnx"
    assert s.rrf_k == 5
    assert s.vector_weight == 2.0
    assert s.embed_api_key is None
    # Ranking: one definition of each default (the pure modules document and measure them).
    from memoryd.cognition.ranking import DEFAULT_CLOSE_MARGIN
    from memoryd.retrieval.bm25 import DEFAULT_B, DEFAULT_K1
    from memoryd.retrieval.answer import DEFAULT_RECALL_THRESHOLD

    assert (s.fusion, s.bm25_k1, s.bm25_b) == ("relevance", DEFAULT_K1, DEFAULT_B)
    assert (s.rank_close_margin, s.recall_threshold) == (DEFAULT_CLOSE_MARGIN,
                                                         DEFAULT_RECALL_THRESHOLD)


@pytest.mark.parametrize("bad", [{"fusion": "borda"}, {"bm25_b": 1.5}, {"bm25_k1": -1},
                                 {"recall_threshold": 2.0}, {"rank_close_margin": -0.1}])
def test_ranking_settings_refuse_bad_values(bad) -> None:
    with pytest.raises(ValidationError):
        Settings(**bad)


def test_settings_that_no_longer_mean_anything_are_ignored(monkeypatch, tmp_path) -> None:
    config = write_toml(tmp_path / "old.toml", "rank_relevance_weight = 0.85\n"
                        "tier_min_similarity = 0.35\nbm25_k1 = 3.0\n")
    monkeypatch.setenv("MEMORYD_CONFIG", str(config))
    s = Settings()
    assert s.bm25_k1 == 3.0 and not hasattr(s, "rank_relevance_weight")
    assert s.resolved_store_url.startswith("sqlite:///") and s.resolved_store_url.endswith("memoryd.db")


def test_precedence_code_env_file_default(monkeypatch, tmp_path) -> None:
    config = write_toml(tmp_path / "xdg" / "memoryd" / "config.toml",
                        "rrf_k = 11\nmax_content_bytes = 1000\ncandidate_pool = 77\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config_file_path() == config
    s = Settings()
    assert (s.rrf_k, s.max_content_bytes, s.candidate_pool) == (11, 1000, 77)
    monkeypatch.setenv("MEMORYD_RRF_K", "22")
    monkeypatch.setenv("MEMORYD_MAX_CONTENT_BYTES", "2000")
    s = Settings()
    assert (s.rrf_k, s.max_content_bytes, s.candidate_pool) == (22, 2000, 77)
    s = Settings(rrf_k=33)
    assert (s.rrf_k, s.max_content_bytes) == (33, 2000)
    # MEMORYD_CONFIG names another file
    other = write_toml(tmp_path / "other.toml", "candidate_pool = 5\n")
    monkeypatch.setenv("MEMORYD_CONFIG", str(other))
    assert Settings().candidate_pool == 5


def test_home_and_store_url(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    assert Settings().resolved_store_url == f"sqlite:///{(tmp_path / 'home' / 'memoryd.db').resolve()}"
    monkeypatch.setenv("MEMORYD_STORE_URL", "sqlite:////elsewhere/x.db")
    assert Settings().resolved_store_url == "sqlite:////elsewhere/x.db"


def test_an_empty_variable_counts_as_unset(monkeypatch, tmp_path) -> None:
    """MEMORYD_HOME="" must not put the store in the current directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMORYD_HOME", "")
    monkeypatch.setenv("MEMORYD_EMBEDDER", "")
    s = Settings()
    assert s.home == default_home() and s.home.resolve() != tmp_path.resolve()
    assert s.embedder == "onnx"


@pytest.mark.parametrize(
    "name, value",
    [("MEMORYD_MAX_CONTENT_BYTES", "3"), ("MEMORYD_RRF_K", "0"), ("MEMORYD_EMBEDDER", "magic"),
     ("MEMORYD_PORT", "70000"), ("MEMORYD_MMR_LAMBDA", "1.5")],
)
def test_invalid_values_are_rejected(monkeypatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        Settings()


def test_masked_hides_secrets(monkeypatch) -> None:
    monkeypatch.setenv("MEMORYD_EMBED_API_KEY", SECRET_KEY)
    monkeypatch.setenv("MEMORYD_STORE_URL", f"postgresql://bob:{DB_PASSWORD}@db.internal:5432/mem")
    masked = Settings().masked()
    text = json.dumps(masked, default=str)
    assert SECRET_KEY not in text and DB_PASSWORD not in text
    assert masked["embed_api_key"] == "********"
    assert masked["store_url"] == "postgresql://bob:********@db.internal:5432/mem"
    assert masked["resolved_store_url"] == "postgresql://bob:********@db.internal:5432/mem"
    assert "config_file" in masked and "max_content_bytes" in masked
    # an unset secret is shown as empty, not as a mask
    monkeypatch.delenv("MEMORYD_EMBED_API_KEY")
    assert Settings().masked()["embed_api_key"] in ("", None)


def test_masked_hides_every_url_credential(monkeypatch) -> None:
    monkeypatch.setenv("MEMORYD_STORE_URL", f"postgresql://db.internal/mem?user=bob&password={DB_PASSWORD}")
    monkeypatch.setenv("MEMORYD_EMBED_URL", f"https://user:{SECRET_KEY}@embeddings.internal/v1")
    text = json.dumps(Settings().masked(), default=str)
    assert DB_PASSWORD not in text
    assert SECRET_KEY not in text


def test_cli_config_masks_secrets(run_cli, cli_env, tmp_path) -> None:
    config = write_toml(Path(cli_env["XDG_CONFIG_HOME"]) / "memoryd" / "config.toml",
                        f'embed_api_key = "{SECRET_KEY}"\nrrf_k = 42\n')
    env = dict(cli_env, MEMORYD_STORE_URL=f"postgresql://bob:{DB_PASSWORD}@db.internal/mem",
               MEMORYD_CANDIDATE_POOL="99")
    plain = run_cli("config", env=env)
    as_json = run_cli("config", "--json", env=env)
    for result in (plain, as_json):
        assert result.returncode == 0, result.stderr
        assert SECRET_KEY not in result.stdout + result.stderr
        assert DB_PASSWORD not in result.stdout + result.stderr
        assert "********" in result.stdout
    data = json.loads(as_json.stdout)
    assert data["rrf_k"] == 42  # from the TOML file
    assert data["candidate_pool"] == 99  # from the environment
    assert data["embed_api_key"] == "********"
    assert data["config_file"] == str(config)
    assert data["home"] == cli_env["MEMORYD_HOME"]
    assert "rrf_k = 42" in plain.stdout


def test_project_writers_from_the_environment_and_the_file(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("MEMORYD_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("MEMORYD_PROJECT_WRITERS", "alpha=bot-1, alpha=bot-2,beta=bot-3")
    assert Settings().project_writers == {"alpha": ["bot-1", "bot-2"], "beta": ["bot-3"]}
    monkeypatch.setenv("MEMORYD_PROJECT_WRITERS", '{"web/shop": ["claw bot"]}')
    assert Settings().project_writers == {"web/shop": ["claw bot"]}
    monkeypatch.delenv("MEMORYD_PROJECT_WRITERS")
    toml = write_toml(tmp_path / "c.toml", '[project_writers]\nalpha = ["bot-1"]\n')
    monkeypatch.setenv("MEMORYD_CONFIG", str(toml))
    assert Settings().project_writers == {"alpha": ["bot-1"]}


@pytest.mark.parametrize("value", ["alpha", "bad name!=bot-1", '{"alpha": [" bot"]}',
                                   '{"alpha": []}', '["alpha"]'])
def test_bad_project_writers_are_refused(monkeypatch, value: str) -> None:
    monkeypatch.setenv("MEMORYD_PROJECT_WRITERS", value)
    with pytest.raises(ValidationError, match="project_writers"):
        Settings()
