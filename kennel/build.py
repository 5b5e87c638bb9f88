"""Build the kennel image (the sandbox the coding CLIs run in), only when it is missing.

The tag is ``fetch-kennel:<first 12 hex of a sha256>`` over the Dockerfile, forwarder.js,
demo_cli.js and the build args, so editing any of them or pinning another CLI version gives
a new tag, and an unchanged kennel costs one ``docker image inspect`` (well under a second).

Extra CA certificates (a TLS-intercepting proxy's, a corporate CA) are copied from
``--ca-dir`` (default: /usr/local/share/ca-certificates when it holds *.crt files) into a
temporary build context, never into the repository. They are *not* part of the tag.

Stdlib only. Usable as::

    python kennel/build.py [--ca-dir DIR | --no-ca] [--build-arg K=V ...] [--print-tag] [--force]
    python -m kennel.build ...
    from kennel.build import image_tag, build_image
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final

KENNEL_DIR: Final = Path(__file__).resolve().parent
DOCKERFILE: Final = KENNEL_DIR / "Dockerfile"
FORWARDER: Final = KENNEL_DIR / "forwarder.js"
DEMO_CLI: Final = KENNEL_DIR / "demo_cli.js"  # the demo harness inside the image
REPOSITORY: Final = "fetch-kennel"
SYSTEM_CA_DIR: Final = Path("/usr/local/share/ca-certificates")
LOCK_PATH: Final = Path(tempfile.gettempdir()) / "fetch-kennel-build.lock"


class BuildError(RuntimeError):
    """The docker build failed (or docker is missing)."""


def _log(msg: str) -> None:
    print(f"[kennel.build] {msg}", file=sys.stderr, flush=True)


def image_tag(
    build_args: Mapping[str, str] | None = None,
    *,
    dockerfile: Path = DOCKERFILE,
    forwarder: Path = FORWARDER,
    demo_cli: Path = DEMO_CLI,
) -> str:
    """``fetch-kennel:<12 hex>``: sha256 over the Dockerfile, forwarder.js, demo_cli.js and
    build args.

    The digest input is ``b"Dockerfile\\0" + bytes + b"\\0forwarder.js\\0" + bytes +
    b"\\0demo_cli.js\\0" + bytes + b"\\0build-args\\0" + json(sorted args)``. Build
    args are hashed as given: passing an ARG's default value explicitly gives another tag
    than leaving it out (both images are the same). CA certificates do not take part.
    """
    h = hashlib.sha256()
    h.update(b"Dockerfile\0")
    h.update(dockerfile.read_bytes())
    h.update(b"\0forwarder.js\0")
    h.update(forwarder.read_bytes())
    h.update(b"\0demo_cli.js\0")
    h.update(demo_cli.read_bytes())
    h.update(b"\0build-args\0")
    args = sorted((str(k), str(v)) for k, v in (build_args or {}).items())
    h.update(json.dumps(args, separators=(",", ":")).encode())
    return f"{REPOSITORY}:{h.hexdigest()[:12]}"


def default_ca_dir() -> Path | None:
    """/usr/local/share/ca-certificates if it holds any *.crt (recursively), else None."""
    return SYSTEM_CA_DIR if _ca_files(SYSTEM_CA_DIR) else None


def _ca_files(ca_dir: Path) -> list[Path]:
    if not ca_dir.is_dir():
        return []
    found = [p for p in ca_dir.rglob("*") if p.suffix in (".crt", ".pem") and p.is_file()]
    return sorted(found)


def image_exists(tag: str, *, docker: str = "docker") -> bool:
    try:
        proc = subprocess.run(
            [docker, "image", "inspect", "--format", "{{.Id}}", tag],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
    except FileNotFoundError:
        return False
    return proc.returncode == 0


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    """One build at a time on this machine (parallel test workers, CI + a developer)."""
    with open(LOCK_PATH, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def make_context(dest: Path, ca_dir: Path | None) -> list[str]:
    """Fill ``dest`` with the build context; return the names of the CA files copied."""
    shutil.copy2(DOCKERFILE, dest / "Dockerfile")
    shutil.copy2(FORWARDER, dest / "forwarder.js")
    shutil.copy2(DEMO_CLI, dest / "demo_cli.js")
    certs = dest / "certs"
    certs.mkdir()
    copied: list[str] = []
    if ca_dir is not None:
        files = _ca_files(ca_dir)
        if not files:
            _log(f"warning: no *.crt or *.pem in {ca_dir}")
        for i, src in enumerate(files):
            # update-ca-certificates only takes *.crt; keep names unique and flat.
            name = f"{i:02d}-{src.stem}.crt"
            shutil.copyfile(src, certs / name)
            copied.append(name)
    return copied


def build_image(
    *,
    ca_dir: Path | str | bool | None = True,
    build_args: Mapping[str, str] | None = None,
    force: bool = False,
    docker: str = "docker",
    quiet: bool = False,
) -> str:
    """Build the kennel image unless ``docker image inspect`` finds its tag; return the tag.

    ``ca_dir``: True picks :func:`default_ca_dir`, None/False uses no extra certificates,
    a path uses the *.crt/*.pem files under it. Build output goes to stderr (or nowhere
    with ``quiet``; then it is shown only if the build fails).
    """
    tag = image_tag(build_args)
    if not force and image_exists(tag, docker=docker):
        return tag
    if shutil.which(docker) is None:
        raise BuildError(f"{docker!r} not found on PATH")
    resolved: Path | None
    if ca_dir is True:
        resolved = default_ca_dir()
    elif ca_dir is None or ca_dir is False:
        resolved = None
    else:
        resolved = Path(ca_dir)
        if not resolved.is_dir():
            raise BuildError(f"--ca-dir {resolved} is not a directory")
    with _build_lock():
        if not force and image_exists(tag, docker=docker):  # built while we waited
            return tag
        with tempfile.TemporaryDirectory(prefix="fetch-kennel-ctx-") as tmp:
            ctx = Path(tmp)
            certs = make_context(ctx, resolved)
            _log(
                f"building {tag} (CA certs: "
                f"{', '.join(certs) + ' from ' + str(resolved) if certs else 'none'})"
            )
            cmd = [docker, "build", "--force-rm", "--tag", tag]
            cmd += ["--label", f"fetch.kennel.tag={tag}"]
            for key, value in sorted((build_args or {}).items()):
                cmd += ["--build-arg", f"{key}={value}"]
            cmd.append(str(ctx))
            start = time.monotonic()
            returncode, output = _run_build(cmd, quiet=quiet)
            if returncode != 0:
                if quiet and output:
                    sys.stderr.write(output[-20000:])
                raise BuildError(
                    f"docker build of {tag} failed (exit {returncode})" + failure_reason(output)
                )
            _log(f"built {tag} in {time.monotonic() - start:.1f} s")
    return tag


def _run_build(cmd: Sequence[str], *, quiet: bool) -> tuple[int, str]:
    """Run ``docker build``; stream its output to stderr unless ``quiet``; return the exit
    code and the whole output (the reason a failed build gives is read from it)."""
    chunks: list[str] = []
    with subprocess.Popen(
        list(cmd), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as proc:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            chunks.append(line)
            if not quiet:
                sys.stderr.write(line)
                sys.stderr.flush()
        code = proc.wait()
    return code, "".join(chunks)


_REASON_PREFIX: Final = "kennel build: "


def failure_reason(output: str) -> str:
    """The Dockerfile's own ``kennel build: ...`` lines (why the registry is unreachable and
    how to fix it), as a suffix for the error; else a hint for the common apt case."""
    said = [
        line.strip()[len(_REASON_PREFIX) :]
        for line in output.splitlines()
        if line.strip().startswith(_REASON_PREFIX)
    ]
    if said:
        return ": " + " ".join(said)
    if "Unable to locate package" in output or "Could not resolve" in output:
        return (
            ": apt could not reach the Debian mirror (no network in the build, or a proxy is "
            "needed: --build-arg HTTP_PROXY=http://proxy:port)"
        )
    return ""


def _parse_build_args(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--build-arg wants KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kennel.build",
        description="Build the kennel image if missing and print its tag.",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--ca-dir",
        type=Path,
        help="folder of extra CA certificates (*.crt/*.pem) to trust during and after the "
        f"build (default: {SYSTEM_CA_DIR} if it holds *.crt files)",
    )
    group.add_argument("--no-ca", action="store_true", help="add no extra CA certificates")
    parser.add_argument(
        "--build-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a Dockerfile ARG (e.g. CODEX_VERSION=0.170.0); part of the tag",
    )
    parser.add_argument("--print-tag", action="store_true", help="print the tag; build nothing")
    parser.add_argument("--force", action="store_true", help="build even if the tag exists")
    parser.add_argument("--quiet", action="store_true", help="show build output only on failure")
    args = parser.parse_args(argv)
    build_args = _parse_build_args(args.build_arg)
    if args.print_tag:
        print(image_tag(build_args))
        return 0
    ca: Path | bool = False if args.no_ca else (args.ca_dir if args.ca_dir else True)
    start = time.monotonic()
    try:
        tag = build_image(ca_dir=ca, build_args=build_args, force=args.force, quiet=args.quiet)
    except BuildError as exc:
        _log(f"error: {exc}")
        return 1
    _log(f"{tag} ready ({time.monotonic() - start:.2f} s)")
    print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
