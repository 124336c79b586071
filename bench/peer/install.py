"""The peer's own environment: a venv under bench/.cache/peer, and its model offline.

mcp-memory-service is installed from the package registry into ``bench/.cache/peer/venv``
(git-ignored; nothing of it is committed) with onnxruntime and tokenizers at the versions
memoryd runs, so that its ONNX embedder (not its hash fallback) is used. Its sqlite-vec
extension needs a Python whose ``sqlite3`` can load extensions: the first such interpreter
found is used for the venv.

Its default model (all-MiniLM-L6-v2) downloads an archive at run time, which cannot work
offline. Its loader first looks for ``~/.cache/mcp_memory/onnx_models/all-MiniLM-L6-v2/onnx/``
holding ``model.onnx`` and ``tokenizer.json``; the bench gives it a HOME of its own
(``bench/.cache/peer/home``) with memoryd's int8 ``model.onnx`` there and the tokenizer memoryd
builds from its vocabulary (same ids), truncating at 256 word pieces as memoryd does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.common import CACHE_DIR

PEER_PACKAGE = "mcp-memory-service"
PEER_VERSION = "12.4.0"
PEER_DIR = CACHE_DIR / "peer"
VENV = PEER_DIR / "venv"
HOME = PEER_DIR / "home"
MODEL_DIR = HOME / ".cache" / "mcp_memory" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
CANDIDATE_PYTHONS = (sys.executable, "/usr/bin/python3", "python3.12", "python3.11", "python3")
_LOADS_EXTENSIONS = ("import sqlite3; c = sqlite3.connect(':memory:'); "
                     "c.enable_load_extension(True)")


def python_with_extensions() -> str:
    """An interpreter whose sqlite3 can load extensions (sqlite-vec needs it)."""
    for name in CANDIDATE_PYTHONS:
        path = shutil.which(name) or (name if Path(name).is_file() else None)
        if path and subprocess.run([path, "-c", _LOADS_EXTENSIONS],
                                   capture_output=True).returncode == 0:
            return path
    raise RuntimeError("no Python here has a sqlite3 that loads extensions; the peer's "
                       "sqlite-vec storage cannot run")


def peer_python() -> Path:
    return VENV / "bin" / "python"


def installed_version() -> str | None:
    """The peer's version in the venv, or None when it is not installed."""
    if not peer_python().is_file():
        return None
    out = subprocess.run([str(peer_python()), "-c", "from importlib.metadata import version; "
                          f"print(version('{PEER_PACKAGE}'))"], capture_output=True, text=True)
    return out.stdout.strip() or None


def runtime_pins() -> list[str]:
    """onnxruntime and tokenizers at the versions memoryd runs with."""
    from importlib.metadata import version

    return [f"onnxruntime=={version('onnxruntime')}", f"tokenizers=={version('tokenizers')}"]


def install(log=print) -> str:
    """Create the venv and install the peer (once); returns the installed version."""
    if installed_version() == PEER_VERSION:
        return PEER_VERSION
    if not peer_python().is_file():
        log(f"creating {VENV}")
        subprocess.run([python_with_extensions(), "-m", "venv", str(VENV)], check=True)
    log(f"installing {PEER_PACKAGE}=={PEER_VERSION} into {VENV}")
    subprocess.run([str(peer_python()), "-m", "pip", "install", "-q",
                    f"{PEER_PACKAGE}=={PEER_VERSION}", *runtime_pins()], check=True)
    version = installed_version()
    if version != PEER_VERSION:
        raise RuntimeError(f"{PEER_PACKAGE} {PEER_VERSION} did not install (found {version})")
    return version


def place_model() -> Path:
    """memoryd's int8 model.onnx and its tokenizer.json where the peer's loader looks."""
    from memoryd.embed.onnx import PRESETS
    from memoryd.embed.vocab import wordpiece_tokenizer

    spec = PRESETS["minilm-int8"]
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    source = spec.onnx_path()
    target = MODEL_DIR / "model.onnx"
    if not target.is_file() or target.stat().st_size != source.stat().st_size:
        shutil.copyfile(source, target)
    tokenizer = wordpiece_tokenizer()
    tokenizer.enable_truncation(max_length=spec.max_tokens)
    tokenizer.save(str(MODEL_DIR / "tokenizer.json"))
    return MODEL_DIR


def offline_env(home: Path = HOME) -> dict[str, str]:
    """The environment a worker runs in: its own HOME, hubs offline, no proxy, no download."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()
           and not k.startswith(("MEMORYD_", "MCP_"))}
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               MCP_MEMORY_ONNX_ALLOW_DOWNLOAD="0", PYTHONDONTWRITEBYTECODE="1")
    return env


def no_network_prefix() -> list[str]:
    """``unshare -n`` (a network namespace with no interface up) when it works here."""
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        return [unshare, "-n"]
    return []
