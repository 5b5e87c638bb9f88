"""What host git may read: an isolated environment and an allowlist of repository config.

Host git runs on a tree a hostile coding CLI may have written. Git can be told to run a
program or to work somewhere else by configuration (filters, textconv, fsmonitor, hooks,
pagers, core.worktree, includes, ...), by environment variables and by files in ``.git``.
So host git gets:

* an environment built from nothing: no system or global config, an empty private HOME,
  and only the ``GIT_*`` variables Fetch sets (``GIT_DIR`` and ``GIT_WORK_TREE`` among them,
  so git never discovers a repository on its own);
* a repository config that holds only keys on an allowlist; anything else is refused by
  name. An allowlist, not a denylist, because git grows new ways to run programs;
* ``-c`` overrides for the dangerous keys anyway, as a second belt.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from core.errors import GitError

# Second belt: command-line config wins over every file, so these hold even if a check
# above them were wrong.
HARDENING = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.splitIndex=false",
    "-c",
    "core.pager=cat",
    "-c",
    "core.editor=true",
    "-c",
    "core.askPass=",
    "-c",
    "core.sshCommand=false",
    "-c",
    "core.gitProxy=",
    "-c",
    "core.alternateRefsCommand=",
    "-c",
    "core.quotePath=true",
    "-c",
    "core.protectNTFS=true",
    "-c",
    "core.protectHFS=true",
    "-c",
    "credential.helper=",
    "-c",
    "diff.external=",
    "-c",
    "diff.ignoreSubmodules=all",
    "-c",
    "status.submoduleSummary=false",
    "-c",
    "submodule.recurse=false",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "log.showSignature=false",
    "-c",
    "gpg.program=false",
    "-c",
    "color.ui=false",
    "-c",
    "protocol.allow=never",
    "-c",
    "uploadpack.packObjectsHook=",
)

# Keys (as `git config --list` prints them: section and name lowercased) that can neither
# run a program nor make git read or write outside the repository.
ALLOWED_KEYS = frozenset(
    {
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.logallrefupdates",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "core.autocrlf",
        "core.eol",
        "core.safecrlf",
        "core.quotepath",
        "core.checkstat",
        "core.trustctime",
        "core.abbrev",
        "core.compression",
        "core.loosecompression",
        "core.whitespace",
        "user.name",
        "user.email",
        "init.defaultbranch",
        "extensions.objectformat",
        "pull.rebase",
        "pull.ff",
        "push.default",
        "fetch.prune",
        "gc.auto",
        "maintenance.auto",
        "maintenance.strategy",
    }
)
# section.<subsection>.name: the subsection is free text, the name is not.
# Not remote.*.uploadpack/receivepack/vcs/proxy (programs, a proxy), nor promisor or
# partialclonefilter (lazy fetches); branch.*.mergeoptions passes options to merge.
ALLOWED_SUBSECTION_KEYS = {
    "remote": frozenset(
        {
            "url",
            "pushurl",
            "fetch",
            "push",
            "tagopt",
            "prune",
            "mirror",
            "skipdefaultupdate",
            "skipfetchall",
            "gh-resolved",
        }
    ),
    "branch": frozenset(
        {"remote", "merge", "rebase", "pushremote", "description", "vscode-merge-base"}
    ),
}
# Values that matter even for allowed keys.
REQUIRED_VALUES = {
    "core.bare": re.compile(r"(?i)false|no|off|0"),
    "core.repositoryformatversion": re.compile(r"[01]"),
    "extensions.objectformat": re.compile(r"(?i)sha1|sha256"),
}
MAX_CONFIG_BYTES = 256 * 1024

# The only environment variables host git inherits from Fetch's own environment.
INHERITED = ("PATH", "TMPDIR", "SYSTEMROOT")


@cache
def private_home() -> Path:
    """An empty HOME / XDG_CONFIG_HOME of Fetch's own, so no user config is ever read."""
    home = Path(tempfile.mkdtemp(prefix="fetch-githome-"))
    atexit.register(shutil.rmtree, home, True)
    return home


def base_env() -> dict[str, str]:
    home = str(private_home())
    env = {name: os.environ[name] for name in INHERITED if name in os.environ}
    env.update(
        {
            "HOME": home,
            "XDG_CONFIG_HOME": home,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_SYSTEM": os.devnull,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_CEILING_DIRECTORIES": str(Path(home).parent),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_PAGER": "cat",
            "PAGER": "cat",
            "GIT_EDITOR": "true",
            "LANGUAGE": "C",
            "LC_ALL": "C",
        }
    )
    return env


def repo_env(gitdir: Path, worktree: Path) -> dict[str, str]:
    """The whole environment of a host git command on one repository."""
    return {**base_env(), "GIT_DIR": str(gitdir), "GIT_WORK_TREE": str(worktree)}


def key_allowed(key: str) -> bool:
    if key in ALLOWED_KEYS:
        return True
    section, _, rest = key.partition(".")
    names = ALLOWED_SUBSECTION_KEYS.get(section)
    if names is None or "." not in rest:
        return False
    return rest.rsplit(".", 1)[1] in names


def check_config(config: Path) -> None:
    """Refuse a repository config holding anything off the allowlist; name the key."""
    try:
        size = config.lstat().st_size
    except FileNotFoundError:
        return
    if size > MAX_CONFIG_BYTES:
        raise GitError(f".git/config is {size} bytes; refusing to read a config that big")
    home = private_home()
    proc = subprocess.run(
        ["git", "config", "--file", str(config), "--no-includes", "--null", "--list"],
        env=base_env(),
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(".git/config is unreadable: " + (detail[-1] if detail else "?"))
    for entry in proc.stdout.split(b"\0"):
        if not entry:
            continue
        raw_key, _, raw_value = entry.partition(b"\n")
        key, value = raw_key.decode(errors="replace"), raw_value.decode(errors="replace")
        if not key_allowed(key):
            raise GitError(
                f"refusing to run git: .git/config sets {key!r}, which could make git run a "
                "program or work outside the repository. If you set it yourself, remove it "
                f"(git config --unset-all {key!r})."
            )
        rule = REQUIRED_VALUES.get(key)
        if rule is not None and not rule.fullmatch(value.strip()):
            raise GitError(f"refusing to run git: .git/config sets {key} = {value!r}")
