"""``fetch doctor`` says whether voice notes can be heard (issue 23, 1): the real command,
with and without a transcription endpoint; a bad chain stops it in one line."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.test_fetch_command import _env, _fetch_executable


def doctor(home: Path, workspace: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_fetch_executable(), "doctor"],
        env=_env(home, FETCH_WORKSPACE=str(workspace), **env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_doctor_says_which_endpoint_hears_voice_notes(tmp_path: Path, workspace: Path) -> None:
    none = doctor(tmp_path / "a", workspace)
    assert none.returncode == 0, none.stderr
    assert "voice:     none (voice notes are answered with how to set" in none.stdout
    set_ = doctor(tmp_path / "b", workspace, FETCH_TRANSCRIPTION_BASE_URL="http://127.0.0.1:9/v1")
    assert "voice:     default (http://127.0.0.1:9/v1), whisper-1, up to 300 s" in set_.stdout
    both = doctor(
        tmp_path / "c",
        workspace,
        FETCH_TRANSCRIPTION_BASE_URL="http://127.0.0.1:9/v1",
        FETCH__TRANSCRIPTION__PROVIDERS="[{name: x, base_url: 'http://127.0.0.1:9/v1'}]",
    )
    assert both.returncode != 0
    assert "transcription.base_url" in both.stderr and "transcription.providers" in both.stderr
    assert "Traceback" not in both.stderr
