"""A memory service is named by what its /info says (name and version), not by the URL and
port it was reached at, and transport options (timeout, retries) do not split it into two
systems in the reports (design 0051)."""

from __future__ import annotations

from helpers.report_runs import rec

from memgauge.analysis import RunData, build_tables


def _service_run(label: str, url: str, tier: str, options: dict, version: str = "1.2",
                 timeout_s: float = 60.0) -> RunData:
    manifest = {
        "config": {"identity": {"system": url, "model": "openai:gpt-x", "context_mode": "text",
                                "tier": tier, "bench": "synth", "system_options": options}},
        # what HttpMemory.describe() writes
        "system": {"name": "http", "url": url, "protocol": "1.1",
                   "server": {"name": "mem-x", "version": version, "modality": "text",
                              "protocol_version": "1.1"},
                   "images": "none", "timeout_s": timeout_s, "max_attempts": 4, "auth": None},
    }
    return RunData(label, manifest, [rec("q1", 1.0), rec("q2", 0.0)])


def test_url_port_and_timeout_do_not_split_a_service():
    runs = [_service_run("a", "http://127.0.0.1:8700", "4k", {}),
            _service_run("b", "http://10.0.0.5:9000/mem", "8k", {"timeout": 30.0},
                         timeout_s=30.0)]
    tables = build_tables(runs)
    assert [s.label for s in tables.systems] == ["http:mem-x 1.2 · openai:gpt-x · text"]
    assert tables.systems[0].tiers == ["4k", "8k"]
    assert "127.0.0.1" not in str(tables.to_dict()["systems"])


def test_another_version_or_option_of_what_it_measures_is_another_system():
    runs = [_service_run("a", "http://127.0.0.1:8700", "4k", {}),
            _service_run("b", "http://127.0.0.1:8700", "4k", {}, version="2.0"),
            _service_run("c", "http://127.0.0.1:8700", "4k", {"images": "inline"})]
    labels = sorted(s.label for s in build_tables(runs).systems)
    assert labels == ["http:mem-x 1.2 · openai:gpt-x · text",
                      'http:mem-x 1.2 · openai:gpt-x · text ({"images": "inline"})',
                      "http:mem-x 2.0 · openai:gpt-x · text"]
