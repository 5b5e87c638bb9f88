"""The words of a self-improvement pull request: title, and a body with the diff summary
(files, +/- lines, cut to a readable size), the test result with the tail of the test
output, and the note that Fetch never merges."""

from __future__ import annotations

from orchestrator.boundary.gitops import Change
from orchestrator.task.testrun import SuiteResult

MAX_FILES = 40  # listed one by one; the rest are counted
TAIL = 30  # lines of test output in the body
LINE = 200  # characters per output line


def title(request: str) -> str:
    text = " ".join(request.split())
    return "Fetch: " + (text if len(text) <= 90 else text[:89] + "…")


def summary(change: Change) -> str:
    """One line: how many files, lines added and removed."""
    added = sum(f.added for f in change.files)
    removed = sum(f.removed for f in change.files)
    count = len(change.files)
    return f"{count} file{'s' if count != 1 else ''} changed, +{added} −{removed}"


def _fence(lines: list[str]) -> str:
    text = "\n".join(line[:LINE] for line in lines)
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}text\n{text}\n{fence}"


def body(request: str, change: Change, tests: SuiteResult | None, branch: str, base: str) -> str:
    files = []
    for f in change.files[:MAX_FILES]:
        counts = "binary" if f.binary else f"+{f.added} −{f.removed}"
        files.append(f"| `{f.path}` | {counts} |")
    more = len(change.files) - MAX_FILES
    if more > 0:
        files.append(f"| …and {more} more file{'s' if more != 1 else ''} | |")
    parts = [
        "Proposed by **Fetch** at its owner's request:",
        "",
        "> " + " ".join(request.split())[:1000],
        "",
        f"### Changes: {summary(change)}",
        "",
        "| file | lines |",
        "|---|---|",
        *files,
        "",
        "### Tests",
        "",
    ]
    if tests is None:
        parts.append("Not run.")
    else:
        if not tests.ran:
            verdict = "⚠️ did not run"
        else:
            verdict = "✅ passed" if passed(tests) else "❌ failed"
        parts.append(f"**{verdict}**: {tests.line().replace(chr(10), ' ')}")
        if tests.plan is not None:
            parts.append(f"\nCommand (in the kennel, no network): `{tests.plan.command}`")
        if tests.output:
            parts += ["", _fence(tests.output[-TAIL:])]
    parts += [
        "",
        "---",
        f"Branch `{branch}` from `{base}`. Fetch never merges and never pushes to `{base}`:"
        " review it, and merge it yourself if you want it.",
    ]
    return "\n".join(parts)


def passed(tests: SuiteResult | None) -> bool:
    return tests is not None and tests.ran and tests.exit_code == 0 and not tests.failed


__all__ = ["body", "passed", "summary", "title"]
