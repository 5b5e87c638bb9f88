"""``fetch doctor`` accepts exactly the configs ``fetch`` accepts: both run the same checks
(orchestrator/config.py, then orchestrator/startcheck.py) before anything starts, and
refuse with the same one line that names where the value came from: the environment
variable when it was one (never a config.yaml that does not exist), else the file.
Real processes of the installed ``fetch`` command, each on its own home."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.test_fetch_command import _env, _fetch_executable

# (name, config.yaml or None, environment, what the one line must say)
BAD: list[tuple[str, str | None, dict[str, str], tuple[str, ...]]] = [
    ("unknown harness", "harness:\n  default: nosuch\n", {}, ("config.yaml", "harness.default")),
    ("unknown harness (env)", None, {"FETCH_HARNESS": "nosuch"}, ("FETCH_HARNESS", "nosuch")),
    (
        "example webhook secret",
        None,
        {"FETCH__WEBHOOK__ENABLED": "true", "FETCH_WEBHOOK_SECRET": "change-me-to-a-long-random"},
        ("environment FETCH_WEBHOOK_SECRET", "not the example's"),
    ),
    ("no workspace", "workspace: /nonexistent/ws\n", {}, ("config.yaml", "workspace")),
    (
        "owner without country code",
        "whatsapp:\n  enabled: true\n  owner: 5551234567\n",
        {},
        ("config.yaml", "whatsapp.owner", "country code"),
    ),
    (
        "whatsapp without owner (env)",
        None,
        {"FETCH__WHATSAPP__ENABLED": "true"},
        ("environment FETCH__WHATSAPP__ENABLED", "whatsapp.owner"),
    ),
    ("bad port (env)", None, {"FETCH__HTTP__PORT": "eighty"}, ("FETCH__HTTP__PORT", "http.port")),
    ("unknown key", "kennel:\n  backnd: docker\n", {}, ("config.yaml", "kennel.backnd")),
    (
        "duplicate key",
        "timezone: UTC\ntimezone: Europe/Berlin\n",
        {},
        ("config.yaml", "line 2", "written twice"),
    ),
    ("not YAML", "model: [unclosed\n", {}, ("config.yaml", "not valid YAML")),
    ("5,000 deep", "a: " + "[" * 5000 + "]" * 5000 + "\n", {}, ("config.yaml", "too deeply")),
    (
        "bad allowlist entry (env)",
        None,
        {"FETCH__ALLOWLIST": "[1]"},
        ("environment FETCH__ALLOWLIST", "allowlist.0"),
    ),
]


def _run(
    home: Path, cwd: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_fetch_executable(), *args],
        cwd=cwd,
        env=_env(home, **env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )


@pytest.mark.parametrize(("name", "config", "env", "says"), BAD, ids=[b[0] for b in BAD])
def test_doctor_and_fetch_refuse_the_same_config_with_the_same_line(
    tmp_path: Path, name: str, config: str | None, env: dict[str, str], says: tuple[str, ...]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    if config is not None:
        (home / "config.yaml").write_text(config, encoding="utf-8")
    doctor = _run(home, tmp_path, env, "doctor")
    fetch = _run(home, tmp_path, env)
    for done in (doctor, fetch):
        assert done.returncode == 2, f"{name}: {done.args}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr
    line = doctor.stderr.strip()
    assert "\n" not in line and line == fetch.stderr.strip(), (doctor.stderr, fetch.stderr)
    assert line.startswith("fetch: configuration error: "), line
    for part in says:
        assert part in line, f"{part!r} not in {line!r}"
    if config is None:  # only the environment spoke: no file is blamed
        assert "config.yaml" not in line, line


def test_a_config_doctor_accepts_fetch_accepts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("harness:\n  default: demo\ntimezone: UTC\n")
    doctor = _run(home, tmp_path, {}, "doctor")
    assert doctor.returncode == 0, doctor.stderr
    fetch = _run(home, tmp_path, {})  # stdin at its end: starts, then stops by itself
    assert fetch.returncode == 0 and "Fetch is ready" in fetch.stdout, fetch.stderr
