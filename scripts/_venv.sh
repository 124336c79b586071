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

# Install the Debian packages the tests start for real (tmux, Xvfb, ...), quietly, only
# those missing; without root or apt-get it says which are missing and goes on.
ensure_apt_packages() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null 2>&1 \
            || echo "note: could not install ${missing[*]} (tests needing them skip)" >&2
    else
        echo "note: missing Debian packages (tests needing them skip): ${missing[*]}" >&2
    fi
}
