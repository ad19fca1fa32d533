"""Prints how many malformed-input cases ran (bench/RESULTS.md quotes the figure)."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from _inputs import CASES

    if sum(CASES.values()):
        verdict = ("0 tracebacks, 0 silent acceptances" if exitstatus == 0
                   else "some failed: see above")
        terminalreporter.write_line(
            f"malformed-input cases: {sum(CASES.values())} ({CASES['hand-written']} "
            f"hand-written, {CASES['hypothesis']} hypothesis-generated); {verdict}")
