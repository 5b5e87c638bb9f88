"""The demo harness's two stand-in CLIs agree: ``harnesses/demo_cli.py`` (host kennels)
and its Node port ``kennel/demo_cli.js`` (the Docker kennel image): the same events and
the same files afterwards, for the same request."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.require import require_binary

ROOT = Path(__file__).resolve().parents[2]
FILES = {
    "README.md": "# demo\n\nTeh quick brown fox. teh end. Wrold, adn Thier becuase.\n",
    "docs/notes.txt": "We recieve seperate langauge files untill now.\n",
    "clean.md": "Nothing to fix here.\n",
}
PROMPTS = [
    "fix the typo in README.md of demo",
    "fix docs/notes.txt and clean.md",
    "fix the typos",
    "fix ../outside.md",
    "fix missing.md",
]


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _run(argv: list[str], prompt: str, tmp: Path, name: str) -> tuple[list[object], dict[str, str]]:
    repo = tmp / name
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    done = subprocess.run(
        [*argv, prompt],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()], _tree(repo)


@pytest.mark.parametrize("prompt", PROMPTS)
def test_node_port_matches_python(tmp_path: Path, prompt: str) -> None:
    require_binary("node")
    node = shutil.which("node")
    assert node is not None
    (tmp_path / "outside.md").write_text("teh outside\n")
    py = _run([sys.executable, "-m", "harnesses.demo_cli"], prompt, tmp_path, "py")
    js = _run([node, str(ROOT / "kennel" / "demo_cli.js")], prompt, tmp_path, "js")
    assert js == py
    assert (tmp_path / "outside.md").read_text() == "teh outside\n"
