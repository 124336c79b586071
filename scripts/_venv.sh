# Create .venv (if missing) and install memoryd into it with the given extras.
# Sourced by scripts/serve and scripts/test; usage: ensure_venv "test"
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${MEMORYD_VENV:-$ROOT/.venv}"

say() { echo "memoryd: $*" >&2; }

# What an install depends on: the project file, the extras asked for, and the interpreter.
install_fingerprint() {
    { cat "$ROOT/pyproject.toml"; echo "extras=$1"; "$VENV/bin/python" -VV; } | sha256sum | cut -c1-16
}

ensure_venv() {
    local extras="${1:-}"
    local python="${PYTHON:-python3}"
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating $VENV (first run; installing takes a minute or two)"
        "$python" -m venv "$VENV"
        "$VENV/bin/python" -m pip install --quiet --upgrade pip
    fi
    # The install is editable, so source changes need no reinstall; only a changed
    # pyproject.toml, other extras or another Python do.
    local stamp="$VENV/.memoryd-install-${extras:-default}"
    local want
    want="$(install_fingerprint "$extras")"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    local target="$ROOT"
    [ -n "$extras" ] && target="$ROOT[$extras]"
    say "installing memoryd${extras:+ with [$extras]} and its dependencies into $VENV"
    "$VENV/bin/python" -m pip install --quiet -e "$target"
    echo "$want" >"$stamp"
    say "installed"
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
