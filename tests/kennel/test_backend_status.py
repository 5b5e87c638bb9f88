"""What /status says about the sandbox, per backend: the unsafe mode names what it does
not protect; the default names what it does."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import start_driver


@pytest.mark.parametrize(
    ("backend", "words"),
    [
        ("unsafe-local", ["UNSAFE local", "NOT protected", "FETCH_HOME", "host processes"]),
        ("bwrap", ["bwrap sandbox", "nothing outlives the task"]),
        ("local", ["bwrap sandbox"]),  # the old name now means the sandbox
    ],
)
async def test_status_names_the_sandbox(
    make_settings: Callable[..., Settings], backend: str, words: list[str]
) -> None:
    app, driver = await start_driver(make_settings(FETCH_KENNEL=backend))
    try:
        status = await driver.ask("/status", "Fetch ·")
    finally:
        await app.__aexit__(None, None, None)
    # Long lines wrap to the phone's width: read the sandbox part as one line.
    flat = " ".join(status.split())
    line = flat[flat.index("sandbox:") : flat.index("model:")]
    for word in words:
        assert word in line, line
