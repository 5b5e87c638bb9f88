"""kennel/build.py without Docker: the tag scheme, the build context, the CLI."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kennel import build  # noqa: E402
from kennel.build import image_tag  # noqa: E402


def test_tag_is_sha256_of_dockerfile_forwarder_and_args() -> None:
    tag = image_tag()
    assert re.fullmatch(r"fetch-kennel:[0-9a-f]{12}", tag)
    h = hashlib.sha256()
    h.update(b"Dockerfile\0" + (REPO / "kennel/Dockerfile").read_bytes())
    h.update(b"\0forwarder.js\0" + (REPO / "kennel/forwarder.js").read_bytes())
    h.update(b"\0demo_cli.js\0" + (REPO / "kennel/demo_cli.js").read_bytes())
    h.update(b"\0build-args\0" + json.dumps([], separators=(",", ":")).encode())
    assert tag == f"fetch-kennel:{h.hexdigest()[:12]}"
    assert image_tag() == tag


def test_tag_follows_build_args_and_files(tmp_path: Path) -> None:
    base = image_tag()
    a = image_tag({"CODEX_VERSION": "9.9.9", "NODE_VERSION": "22.23.3"})
    b = image_tag({"NODE_VERSION": "22.23.3", "CODEX_VERSION": "9.9.9"})
    assert a == b != base
    df = tmp_path / "Dockerfile"
    df.write_bytes((REPO / "kennel/Dockerfile").read_bytes() + b"\n# changed\n")
    assert image_tag(dockerfile=df) != base
    fw = tmp_path / "forwarder.js"
    fw.write_bytes((REPO / "kennel/forwarder.js").read_bytes() + b"\n")
    assert image_tag(forwarder=fw) != base
    demo = tmp_path / "demo_cli.js"
    demo.write_bytes((REPO / "kennel/demo_cli.js").read_bytes() + b"\n")
    assert image_tag(demo_cli=demo) != base


def test_context_gets_certs_but_the_repo_does_not(tmp_path: Path) -> None:
    ca = tmp_path / "ca"
    (ca / "sub").mkdir(parents=True)
    (ca / "proxy.crt").write_text("-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n")
    (ca / "sub" / "corp.pem").write_text(
        "-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----\n"
    )
    (ca / "notes.txt").write_text("not a cert")
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    copied = build.make_context(ctx, ca)
    assert copied == ["00-proxy.crt", "01-corp.crt"]
    assert sorted(p.name for p in ctx.iterdir()) == [
        "Dockerfile",
        "certs",
        "demo_cli.js",
        "forwarder.js",
    ]
    assert (ctx / "certs" / "01-corp.crt").read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert not (REPO / "kennel" / "certs").exists() or not any(
        p.name in {"00-proxy.crt", "01-corp.crt"} for p in (REPO / "kennel" / "certs").iterdir()
    )
    empty = tmp_path / "ctx2"
    empty.mkdir()
    assert build.make_context(empty, None) == []
    assert list((empty / "certs").iterdir()) == []


def test_certs_folder_is_ignored_by_git() -> None:
    out = subprocess.run(
        ["git", "check-ignore", "-q", "kennel/certs/proxy.crt"], cwd=REPO, check=False
    )
    assert out.returncode == 0


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "kennel/build.py", "--print-tag"],
        [sys.executable, "-m", "kennel.build", "--print-tag"],
    ],
)
def test_cli_prints_the_tag(argv: list[str]) -> None:
    out = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == image_tag()
    args = subprocess.run(
        [*argv, "--build-arg", "CODEX_VERSION=1.2.3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert args.stdout.strip() == image_tag({"CODEX_VERSION": "1.2.3"})


def test_existing_image_is_not_rebuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def fake_exists(tag: str, *, docker: str = "docker") -> bool:
        calls.append(tag)
        return True

    def no_build(*a: object, **k: object) -> None:
        raise AssertionError("must not build")

    monkeypatch.setattr(build, "image_exists", fake_exists)
    monkeypatch.setattr(subprocess, "run", no_build)
    assert build.build_image() == image_tag()
    assert calls == [image_tag()]
