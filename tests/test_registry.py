"""The registry keeps a typed record per plugin (issue 26 §1): what its decorator declared,
or the defaults for what it did not, read through ``registration`` instead of attributes
probed on the factory."""

from __future__ import annotations

from typing import Any

import pytest

from memgauge import registry
from memgauge.errors import ConfigError
from memgauge.registry import (
    BASELINE,
    MEMORY_AGENT,
    NEEDS_PROGRAM,
    Registration,
    registration,
    system_kind,
)


@pytest.fixture
def own_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the system table, so the systems registered here leave with the test."""
    registry._load_builtins()
    registry._load_lazy("system")
    monkeypatch.setitem(registry._REGISTRY, "system", dict(registry._REGISTRY["system"]))


def test_a_system_registered_without_declarations_gets_the_defaults(own_table) -> None:
    @registry.system("bare-test")
    def bare(ctx: Any) -> Any:
        return None

    got = registration("system", "bare-test")
    assert got == Registration("system", "bare-test", bare)
    assert got.factory is bare and registry.lookup("system", "bare-test") is bare
    assert dict(got.options) == {}
    assert got.requires({"any": 1}) == []
    assert got.needs({"any": 1}) == set()
    assert got.system_kind({}) == MEMORY_AGENT and got.judge_rubric is None
    assert not [a for a in vars(bare) if a.startswith("registry_")], "no attributes set"


def test_a_system_keeps_what_it_declared(own_table) -> None:
    options = {"top_k": (int, "how many")}

    @registry.system("declared-test", options=options,
                     requires=lambda o: [("no_such_module_x", "extra", "why")],
                     needs=lambda o: {NEEDS_PROGRAM} if o.get("reader") == "oracle" else set(),
                     kind=lambda o: BASELINE)
    def declared(ctx: Any) -> Any:
        return None

    options["late"] = (str, "added after registering")  # the record keeps its own copy
    got = registration("system", "declared-test")
    assert dict(got.options) == {"top_k": (int, "how many")}
    assert got.requires({}) == [("no_such_module_x", "extra", "why")]
    assert got.needs({"reader": "oracle"}) == {NEEDS_PROGRAM} and got.needs({}) == set()
    assert system_kind("declared-test", {}) == BASELINE
    with pytest.raises(TypeError):
        got.options["x"] = (int, "")  # type: ignore[index]


def test_registering_another_factory_under_a_taken_name_fails(own_table) -> None:
    @registry.system("twice-test")
    def first(ctx: Any) -> Any:
        return None

    registry.system("twice-test")(first)  # the same factory again: a re-import, fine
    with pytest.raises(ValueError, match="registered twice"):
        registry.system("twice-test")(lambda ctx: None)


def test_a_memory_service_url_is_registered_with_its_options() -> None:
    from memgauge.systems.http_system import OPTIONS

    got = registration("system", "http://127.0.0.1:9/mem")
    assert got.name == "http://127.0.0.1:9/mem" and callable(got.factory)
    assert dict(got.options) == dict(OPTIONS)
    assert got.needs({}) == set()  # the service answers: the run's model is not asked
    assert got.system_kind({}) == MEMORY_AGENT


def test_a_benchmark_declares_its_judge_rubric() -> None:
    assert registration("benchmark", "memeye").judge_rubric == "memeye"
    assert registration("benchmark", "locomo").judge_rubric is None
    assert registry.judge_rubric_of("memeye", "free_text") == "memeye"
    assert registry.judge_rubric_of("locomo", "free_text") == registry.DEFAULT_RUBRIC


def test_an_unknown_name_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="unknown system 'no-such'; known: .*rag"):
        registration("system", "no-such")
    assert system_kind("no-such", {}) == MEMORY_AGENT  # another machine's plugin


def test_registrations_list_every_name() -> None:
    listed = registry.registrations("system")
    assert [r.name for r in listed] == registry.names("system")
    assert all(r.kind == "system" for r in listed)
