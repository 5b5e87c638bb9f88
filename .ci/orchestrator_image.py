"""Build the orchestrator image for docker-compose, only when missing.

Tag: ``fetch-orchestrator:<12 hex>`` over every file the image copies. Like the kennel
build, the host's extra CA certificates go into a temporary build context (never the
repository), so pip works behind a TLS-intercepting proxy. Prints the tag.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARTS = [
    "pyproject.toml",
    "setup.py",
    "README.md",
    "data",
    "core",
    "channels",
    "orchestrator",
    "instincts",
    "harnesses",
    "identity",
    "skills",
    "kennel",
]
CA_DIR = Path("/usr/local/share/ca-certificates")


def files() -> list[Path]:
    found: list[Path] = []
    for part in PARTS:
        path = ROOT / part
        if path.is_file():
            found.append(path)
        else:
            found += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and "certs" not in p.parts
            )
    return found


def tag() -> str:
    digest = hashlib.sha256()
    for path in files():
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return f"fetch-orchestrator:{digest.hexdigest()[:12]}"


def main() -> int:
    name = tag()
    if "--print-tag" in sys.argv:
        print(name)
        return 0
    exists = subprocess.run(["docker", "image", "inspect", name], capture_output=True)
    if exists.returncode == 0:
        print(name)
        return 0
    with tempfile.TemporaryDirectory(prefix="fetch-orch-ctx-") as tmp:
        ctx = Path(tmp)
        for path in files():
            dest = ctx / path.relative_to(ROOT)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        certs = ctx / "certs"
        certs.mkdir()
        for crt in sorted(CA_DIR.glob("*.crt")) if CA_DIR.is_dir() else []:
            shutil.copy2(crt, certs / crt.name)
        print(f"[orchestrator_image] building {name}", file=sys.stderr, flush=True)
        build = subprocess.run(
            [
                "docker",
                "build",
                "-q",
                "-f",
                str(ctx / "orchestrator" / "Dockerfile"),
                "-t",
                name,
                "-t",
                "fetch-orchestrator:latest",
                str(ctx),
            ],
            stdout=sys.stderr,
        )
        if build.returncode != 0:
            print("[orchestrator_image] docker build failed", file=sys.stderr)
            return build.returncode
    print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
