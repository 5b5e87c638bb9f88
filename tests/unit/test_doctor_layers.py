"""fetch doctor says how a run's tree is made here and which toolchains the bwrap
kennel sees (the host's, in /usr)."""

from __future__ import annotations

import os
from pathlib import Path

from kennel.bwrap import TOOLCHAINS, toolchains
from orchestrator.boundary.layer import describe_kind


def test_a_backend_that_binds_once_gets_copies(tmp_path: Path) -> None:
    assert describe_kind(tmp_path, host_mounts=False).startswith("copy")


def test_root_with_overlayfs_gets_an_overlay(tmp_path: Path) -> None:
    kind = describe_kind(tmp_path, host_mounts=True)
    if os.geteuid() != 0:
        assert "needs Fetch to be root" in kind
    else:
        assert kind.startswith(("overlay", "copy")) and "root" not in kind
    assert list(tmp_path.iterdir()) == []  # the probe leaves nothing


def test_toolchains_outside_usr_do_not_count(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "gcc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    found, missing = toolchains(str(bin_dir))
    assert found == [] and missing == list(TOOLCHAINS)  # not under /usr: not inside
    found, missing = toolchains("/usr/bin:/bin")
    assert "git" in found and set(found) | set(missing) == set(TOOLCHAINS)
