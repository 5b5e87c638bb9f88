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


def test_doctor_names_what_setup_may_reach(tmp_path: Path) -> None:
    from orchestrator.cli import _setup_line
    from orchestrator.config import load_settings

    config = tmp_path / "config.yaml"
    config.write_text("kennel:\n  setup:\n    registries: ['https://mirror.example/simple/']\n")
    settings = load_settings(config, {"FETCH_HOME": str(tmp_path / "home")})
    line = _setup_line(settings)
    assert "mirror.example:443" in line and "kennel.setup.registries" in line
    config.write_text("kennel:\n  setup:\n    enabled: false\n")
    assert _setup_line(load_settings(config, {"FETCH_HOME": str(tmp_path)})).startswith("off")
    config.write_text("kennel:\n  setup:\n    registries: ['ftp://nope/']\n")
    try:
        load_settings(config, {"FETCH_HOME": str(tmp_path)})
    except Exception as err:  # ConfigError: the file, the key, what is wrong
        assert "kennel.setup.registries" in str(err) and "ftp://nope/" in str(err)
    else:
        raise AssertionError("a registry that is not an http(s) URL was accepted")


def test_doctor_names_the_owners_mcp_servers(tmp_path: Path) -> None:
    from orchestrator.cli import _mcp_lines
    from orchestrator.config import load_settings

    config = tmp_path / "config.yaml"
    config.write_text(
        "mcp:\n  servers:\n"
        "    files: {command: [mcp-server-filesystem, /srv], env: {T: '${NOT_SET_HERE_X}'}}\n"
        "    tracker: {url: 'https://tracker.example/mcp', default: allow}\n"
    )
    lines = _mcp_lines(load_settings(config, {"FETCH_HOME": str(tmp_path / "h")}))
    assert lines[0].startswith("mcp:       files: stdio mcp-server-filesystem, no network")
    assert "ERROR ${NOT_SET_HERE_X} is not set" in lines[0]
    assert "tracker: url https://tracker.example/mcp, from the host" in lines[1]
    assert lines[1].endswith("a tool with no rule: allow")
    config.write_text("mcp:\n  servers:\n    Bad Name: {url: 'https://x/'}\n")
    try:
        load_settings(config, {"FETCH_HOME": str(tmp_path / "h")})
    except Exception as err:
        assert "mcp.servers" in str(err)
    else:
        raise AssertionError("a bad server name was accepted")
