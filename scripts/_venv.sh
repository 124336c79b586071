# Create .venv (if missing) and install memoryd into it with the given extras.
# Sourced by scripts/serve and scripts/test; usage: ensure_venv "test"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MEMORYD_VENV:-$ROOT/.venv}"

ensure_venv() {
    local extras="${1:-}"
    local python="${PYTHON:-python3}"
    if [ ! -x "$VENV/bin/python" ]; then
        "$python" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
    fi
    local target="$ROOT"
    [ -n "$extras" ] && target="$ROOT[$extras]"
    # torch is pinned to the CPU build in pyproject.toml; an unpinned torch would
    # pull a multi-GB CUDA build.
    "$VENV/bin/python" -m pip install --quiet -e "$target"
}
