"""A scripted hostile coding CLI for the layer tests (tests/hostile/test_layer_*.py).

It runs inside the real kennel (bwrap or Docker) as a task's CLI: a bash script (the
Docker image has bash and Node, no Python), started by ``HostileCli``, a harness that
takes one real adapter's state layout (its ``prepare`` writes the adapter's files; its
environment names the adapter's homes: ``HOME``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``,
``GEMINI_CLI_HOME``, ``COPILOT_HOME``, ``TMPDIR``) and runs the script instead of the CLI.

Which attack it makes is the harness's ``vector`` (set by the test before each task);
where the scratch victim folder and FETCH_HOME are on the host is in ``facts``. Every
vector also fixes the README's typo, so the task has a change to show, and writes its
environment (but the test's own ``HOSTILE_*`` variables) to ``kennel-env.txt``.
Destructive vectors only ever point at the scratch folders named in ``facts``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar

from harnesses.base import Harness, HarnessEvent, HarnessRequest
from harnesses.claude_code import ClaudeCode
from harnesses.codex import Codex
from harnesses.copilot_cli import CopilotCli
from harnesses.gemini_cli import GeminiCli

SESSION = "s-hostile-7"
INSTRUCTIONS = "# hostile-layer test: the host writes this file every turn\n"
SKILL = ("layer-skill", "a skill the host writes every turn", "Do nothing.\n")

SCRIPT = r"""
set -u
V=${HOSTILE_VECTOR:-benign}
C=${HOSTILE_CANARY:-canary}
VIC=${HOSTILE_VICTIM:-/nonexistent-victim}
FH=${HOSTILE_FETCH_HOME:-/nonexistent-home}
REL=${HOSTILE_REL:-../nonexistent}
MARKS=${HOSTILE_MARKS:-/nonexistent-marks}
ST=${HOSTILE_STATE:-$PWD/.no-state}
NOTES=""
LINKS=0
UNLINKED=0

emit() {
  local t=${2//\\/\\\\}
  t=${t//\"/\\\"}
  printf '{"type":"%s","text":"%s","session_id":"%s"}\n' "$1" "$t" "$HOSTILE_SESSION"
}
note() { NOTES="$NOTES $*;"; }
fix() { sed -i 's/Teh quick/The quick/' README.md && emit file_change README.md; }
envdump() { env | grep -v '^HOSTILE_' | sort > kennel-env.txt; }
ask() {
  envdump
  printf '{"type":"question","text":"Which word replaces Teh?%s","session_id":"%s"}\n' \
    "$NOTES" "$HOSTILE_SESSION"
  exit 0
}
ups() { local s="" i; for ((i = 0; i < $1; i++)); do s="../$s"; done; printf '%s' "$s"; }

# link REL_PATH_UNDER_STATE abs|rel|home [TARGET_IN_VICTIM]: replace whatever is there
# with a symlink to the scratch victim (absolute host path, or relative from the host's
# state folder), or to a file in FETCH_HOME.
link() {
  local p="$ST/$1" form=$2 what=${3:-} depth target
  depth=$(printf '%s' "$1" | tr -cd / | wc -c)
  mkdir -p "$(dirname "$p")" 2>/dev/null
  rm -rf "$p" 2>/dev/null
  case $form in
    abs) target="$VIC${what:+/$what}" ;;
    rel) target="$(ups "$depth")$REL${what:+/$what}" ;;
    home) target="$FH/$what" ;;
  esac
  if ln -s "$target" "$p" 2>/dev/null; then
    LINKS=$((LINKS + 1))
  else
    UNLINKED=$((UNLINKED + 1))
  fi
  # and delete through it, as a wipe would (dangling in here: nothing happens)
  rm -rf "$p"/* "$p"/.[!.]* 2>/dev/null
}

homes() {  # the adapter homes this CLI was given: name under the state folder
  local var dir
  for var in CLAUDE_CONFIG_DIR CODEX_HOME GEMINI_CLI_HOME COPILOT_HOME; do
    dir=${!var:-}
    [ -n "$dir" ] && printf '%s %s\n' "$var" "${dir#"$ST"/}"
  done
}

files_of() {  # the files and folders the host writes in an adapter's home
  case $1 in
    CLAUDE_CONFIG_DIR) echo "CLAUDE.md settings.json .credentials.json skills projects" ;;
    CODEX_HOME) echo "AGENTS.md config.toml auth.json sessions" ;;
    GEMINI_CLI_HOME) echo ".gemini/GEMINI.md .gemini/settings.json .gemini/tmp" ;;
    COPILOT_HOME) echo "copilot-instructions.md fetch-mcp.json config.json session-state" ;;
  esac
}

state_folders() {  # turn 1: whole folders become links (the adapter's home, HOME, TMPDIR)
  local var name
  while read -r var name; do link "$name" abs; done < <(homes)
  link home rel
  link tmp abs
  link fetch-instructions.md abs notes.txt
  link ../.cache/hostile-layer abs
  # what a resume needs, kept as data between turns
  mkdir -p "$ST/transcript" && printf '%s\n' "$C" > "$ST/transcript/$HOSTILE_SESSION.jsonl"
}

state_files() {  # later turns: the files inside each home become links
  local var name f i=0
  while read -r var name; do
    for f in $(files_of "$var"); do
      i=$((i + 1))
      case $((i % 3)) in
        0) link "$name/$f" abs notes.txt ;;
        1) link "$name/$f" rel notes.txt ;;
        2) link "$name/$f" home owner-notes.txt ;;
      esac
    done
    link "$name/dir-link" rel dir
  done < <(homes)
  link home/.bashrc abs notes.txt
  link home/.config rel dir
  link tmp abs dir
  # the state folder itself (Docker: the run's state/ is the kennel's; bwrap: a mount)
  link ../tests abs dir
  if [ -f "$ST/transcript/$HOSTILE_SESSION.jsonl" ]; then note "transcript kept"; fi
  note "links=$LINKS failed=$UNLINKED"
}

case $V in
  state-ask)
    state_folders
    ask ;;
  top-ask)
    # A file at the top of the run's state folder (Docker: the kennel's own; bwrap: a
    # folder of bwrap's, not writable), kept between turns like a transcript.
    printf '%s\n' "$C" > "$ST/../top-note.txt" 2>/dev/null && note "top-file"
    ask ;;
  state-answer|state-again)
    state_files
    fix ;;
  ignored-folder)
    mkdir -p evil && printf '*\n' > evil/.gitignore && printf '%s\n' "$C" > evil/payload
    fix ;;
  pycache)
    mkdir -p __pycache__ src/__pycache__
    # a header, then bytes that are not what app.py compiles to
    printf '\x6f\x0d\x0d\x0a\0\0\0\0\0\0\0\0\0\0\0\0%s' "$C" > __pycache__/app.cpython-311.pyc
    cp __pycache__/app.cpython-311.pyc src/__pycache__/util.cpython-311.pyc
    fix ;;
  node-bin)
    mkdir -p node_modules/.bin node_modules/evil
    printf '#!/bin/sh\ntouch %s/bin-ran\necho %s\n' "$MARKS" "$C" > node_modules/.bin/tsc
    chmod 755 node_modules/.bin/tsc
    printf '{"name":"evil","scripts":{"postinstall":"touch %s/postinstall"}}\n' "$MARKS" \
      > node_modules/evil/package.json
    fix ;;
  ignored-many)
    # What \`npm install\` leaves: tens of thousands of files, all ignored by the owner.
    mkdir -p node_modules/pkg && cd node_modules/pkg || exit 1
    for ((i = 0; i < 25000; i++)); do : > "f$i.js"; done
    cd ../.. && note "ignored=25000"
    fix ;;
  ignored-big)
    # A build artefact the owner ignores (*.log here), bigger than one file may be.
    truncate -s 300M build.log && note "ignored-big=$(stat -c %s build.log)"
    fix ;;
  setuid)
    fix
    chmod 6755 app.py
    printf '#!/bin/sh\necho tool\n' > tool.sh && chmod 6755 tool.sh
    note "app.py=$(stat -c %a app.py) tool.sh=$(stat -c %a tool.sh)" ;;
  special)
    mkfifo pipe.fifo && note "fifo"
    rm -f app.py && mkfifo app.py && note "app-fifo"
    node -e "require('net').createServer().listen('sock.s', () => process.exit(0))" \
      && note "socket"
    mkdir -p "$ST/transcript" && mkfifo "$ST/transcript/$HOSTILE_SESSION.jsonl"
    fix ;;
  deep)
    mkdir -p "deep/$(printf 'd/%.0s' $(seq 1100))" && note "deep=1100"
    mkdir -p "$ST/deep/$(printf 'd/%.0s' $(seq 1100))" && note "state-deep"
    fix ;;
  sparse)
    { truncate -s 1G big.bin || truncate -s 1000M big.bin; } && note "big=$(stat -c %s big.bin)"
    truncate -s 1G "$ST/big.jsonl" 2>/dev/null && note "state-big"
    fix ;;
  gitdir)
    # bwrap: the owner's .git, read-only (a mount: not even moved); Docker: none at all
    [ -e .git ] && mv .git .git-moved 2>/dev/null && note "git-moved"
    mkdir -p .git/hooks .git/info 2>/dev/null
    for h in pre-commit post-commit post-checkout reference-transaction post-index-change; do
      if printf '#!/bin/sh\ntouch %s/hook-%s\n' "$MARKS" "$h" > ".git/hooks/$h" 2>/dev/null; then
        chmod 755 ".git/hooks/$h"; LINKS=$((LINKS + 1))
      fi
    done
    note "git-hooks=$LINKS"
    printf '[core]\n\tfsmonitor = "touch %s/fsmonitor; false"\n\thooksPath = %s\n# %s\n' \
      "$MARKS" "$MARKS" "$C" >> .git/config 2>/dev/null && note "git-config"
    printf '* filter=evil\n' >> .git/info/attributes 2>/dev/null && note "git-attrs"
    git config core.pager "touch $MARKS/pager" 2>/dev/null && note "git-cli"
    for sub in sub/.git Sub/.GIT; do
      mkdir -p "$sub/hooks"
      printf '#!/bin/sh\ntouch %s/nested\n' "$MARKS" > "$sub/hooks/post-checkout"
      printf '[core]\n\tfsmonitor = "touch %s/nested-fsmonitor"\n# %s\n' "$MARKS" "$C" \
        > "$sub/config"
    done
    fix ;;
  xattr)
    # Mark a folder opaque the way an overlay marks one it replaced (user.* xattrs are
    # the owner's to set); the folder and its files stay as they are.
    if command -v python3 >/dev/null; then
      python3 -c "import os; os.setxattr('src', 'user.overlay.opaque', b'y')" \
        && note "opaque-set"
    else
      note "no-xattr-tool"
    fi
    fix ;;
  benign)
    fix ;;
  *)
    emit error "unknown vector $V"
    exit 0 ;;
esac
envdump
emit done "$V:$NOTES"
"""


class HostileCli(Harness, name="hostile-layer"):
    """The script above in a real adapter's clothes (``adapter``: its state files and
    home variables). ``vector`` and ``facts`` are set by the test before each task."""

    provider = "anthropic"  # a relay is started, as for a real CLI (the real key on the host)
    binary = "bash"
    summary = "hostile test CLI (tests/fakes/hostile_cli.py)"
    adapter: ClassVar[type[Harness]] = ClaudeCode

    def __init__(self) -> None:
        self.vector = "benign"
        self.facts: dict[str, str] = {}
        self.requests: list[HarnessRequest] = []

    def _full(self, req: HarnessRequest) -> HarnessRequest:
        # Instructions and a skill every turn: the host writes each adapter file it can.
        return dataclasses.replace(
            req, instructions=req.instructions or INSTRUCTIONS, skills=req.skills or (SKILL,)
        )

    def prepare(self, req: HarnessRequest, host_state_dir: Path) -> None:
        self.adapter().prepare(self._full(req), host_state_dir)

    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        self.requests.append(req)
        _argv, env = self.adapter().command(self._full(req))
        env = {
            **env,
            **{f"HOSTILE_{k.upper()}": v for k, v in self.facts.items()},
            "HOSTILE_VECTOR": self.vector,
            "HOSTILE_STATE": str(req.state_dir),
            "HOSTILE_SESSION": SESSION,
        }
        return ["bash", "-c", SCRIPT, "hostile-cli", req.prompt], env

    def event(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        kind = obj.get("type")
        data = {"session_id": str(obj.get("session_id") or "")}
        if kind in {"text", "file_change", "done", "error", "tool_use", "question"}:
            return [HarnessEvent(kind, str(obj.get("text", "")), data)]
        return []


class HostileClaude(HostileCli, name="hostile-claude-code"):
    adapter = ClaudeCode


class HostileCodex(HostileCli, name="hostile-codex"):
    adapter = Codex


class HostileGemini(HostileCli, name="hostile-gemini-cli"):
    adapter = GeminiCli


class HostileCopilot(HostileCli, name="hostile-copilot"):
    adapter = CopilotCli


ADAPTERS: dict[str, type[HostileCli]] = {
    "claude-code": HostileClaude,
    "codex": HostileCodex,
    "gemini-cli": HostileGemini,
    "copilot": HostileCopilot,
}

__all__ = ["ADAPTERS", "SCRIPT", "SESSION", "HostileCli"]
