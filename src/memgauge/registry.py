"""Name -> factory registries for benchmarks, systems, models, scorers, judge rubrics and
captioners.

Adding a benchmark, a memory system or a scorer is one new module with a decorated factory
plus one import line in that package's ``__init__``. Outside packages register through the
entry-point groups ``memgauge.benchmarks``, ``memgauge.systems``, ``memgauge.scorers``,
``memgauge.rubrics``, ``memgauge.models`` and ``memgauge.captioners`` (each entry point names
a module to import; its decorators register). Every registered scorer scores every run's
records (``memgauge run``) and fills in the records that lack it (``memgauge score``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from .errors import ConfigError, ConfigFieldError, literal

F = TypeVar("F", bound=Callable[..., Any])

_KINDS = ("benchmark", "system", "scorer", "rubric", "model", "captioner")
_loaded_plugins: set[str] = set()


# What a system needs installed for the options it is given: (import name, the memgauge
# extra that installs it, what it is for). Checked before the first request (pre-flight).
Requirement = tuple[str, str, str]
Requires = Callable[[dict[str, Any]], list[Requirement]]

# What a system needs of the run for the options it is given (design 0043), checked before
# the first request: ``model`` (it asks --model for answers or ingest, so ``none:`` cannot
# serve it), ``program`` (it answers from a generated benchmark's gold program and evidence,
# as the oracles do). A system that declares nothing is not checked.
NEEDS_MODEL, NEEDS_PROGRAM = "model", "program"
Needs = Callable[[dict[str, Any]], set[str]]


def no_needs(options: dict[str, Any]) -> set[str]:
    return set()


# What a system is in the reports' comparison (design 0051): ``long-context`` puts the
# history in the prompt, a ``memory agent`` keeps and recalls a memory of its own, a
# ``baseline`` answers from what it is handed (gold evidence, an oracle reader, no history).
# Declared where the system is registered, for its options (rag with reader=oracle is one).
LONG_CONTEXT, MEMORY_AGENT, BASELINE = "long-context", "memory agent", "baseline"
SYSTEM_KINDS = (LONG_CONTEXT, MEMORY_AGENT, BASELINE)
Kind = Callable[[dict[str, Any]], str]


def memory_agent(options: dict[str, Any]) -> str:
    return MEMORY_AGENT


def long_context(options: dict[str, Any]) -> str:
    return LONG_CONTEXT


def baseline(options: dict[str, Any]) -> str:
    return BASELINE


def no_requirements(options: dict[str, Any]) -> list[Requirement]:
    return []


@dataclass(frozen=True)
class Registration:
    """What the registry knows of one registered plugin: its factory and what its decorator
    declared. Every field but the first three has the default a plugin registered without
    it gets (an entry point's ``@system("x")`` with no options: no options, nothing
    required, no needs, a memory agent)."""

    kind: str  # benchmark, system, scorer, rubric, model or captioner
    name: str
    factory: Callable[..., Any]
    # A system's ``--system-option`` keys: ``key: (type, help)``.
    options: Mapping[str, tuple[type, str]] = field(default_factory=lambda: MappingProxyType({}))
    requires: Requires = no_requirements  # a system's optional packages for its options
    needs: Needs = no_needs  # what a system needs of the run (NEEDS_MODEL, NEEDS_PROGRAM)
    system_kind: Kind = memory_agent  # what a system is in the reports' comparison
    judge_rubric: str | None = None  # a benchmark's rubric for open-ended answers (auto)


_REGISTRY: dict[str, dict[str, Registration]] = {k: {} for k in _KINDS}


def _register(kind: str, name: str, options: dict[str, tuple[type, str]] | None = None,
              requires: Requires = no_requirements, needs: Needs = no_needs,
              judge_rubric: str | None = None,
              system_kind: Kind = memory_agent) -> Callable[[F], F]:
    def deco(fn: F) -> F:
        known = _REGISTRY[kind].get(name)
        if known is not None and known.factory is not fn:
            raise ValueError(f"{kind} {name!r} is registered twice")
        _REGISTRY[kind][name] = Registration(
            kind, name, fn, options=MappingProxyType(dict(options or {})),
            requires=requires or no_requirements, needs=needs, system_kind=system_kind,
            judge_rubric=judge_rubric)
        return fn

    return deco


def missing_extras(requirements: list[Requirement], who: str, *fields: str) -> None:
    """A :class:`ConfigError` naming every package of ``requirements`` that is not
    installed and the extra that installs it; found without importing anything. ``who``
    is a :class:`ConfigFieldError` template naming ``fields`` (``{system} mem0``) when
    they are given."""
    import importlib.util

    missing = []
    for module, extra, purpose in dict.fromkeys(requirements):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent package missing, a broken install
            found = False
        if not found:
            missing.append((module, extra, purpose))
    if missing:
        what = "; ".join(f"{m!r} for {purpose}" for m, _, purpose in missing)
        extras = ",".join(dict.fromkeys(e for _, e, _ in missing if not e.startswith("pip ")))
        others = [e for _, e, _ in missing if e.startswith("pip ")]  # not one of ours
        how = " and ".join([*([f"pip install 'memgauge[{extras}]'"] if extras else []),
                            *dict.fromkeys(others)])
        if fields:
            raise ConfigFieldError(f"{who} needs {literal(what)}, not installed: "
                                   f"{literal(how)}", *fields)
        raise ConfigError(f"{who} needs {what}, not installed: {how}")


DEFAULT_RUBRIC = "memlens"  # the judge rubric of every answer no benchmark claims


def benchmark(name: str, judge_rubric: str | None = None) -> Callable[[F], F]:
    """Register a benchmark loader. ``judge_rubric`` names the judge rubric that scores its
    open-ended (free-text) answers when the judge's rubric is ``auto`` (None: the default
    rubric, MemLens's)."""
    return _register("benchmark", name, judge_rubric=judge_rubric)


def judge_rubric_of(benchmark_name: str, answer_type: str) -> str:
    """The rubric ``--judge-rubric auto`` picks for an answer of ``answer_type`` to a
    question of ``benchmark_name`` (a benchmark not registered here: the default)."""
    if answer_type != "free_text":
        return DEFAULT_RUBRIC
    try:
        declared = registration("benchmark", benchmark_name).judge_rubric
    except ConfigError:  # a record of a plugin's benchmark no longer installed
        return DEFAULT_RUBRIC
    return declared or DEFAULT_RUBRIC


def system(name: str, options: dict[str, tuple[type, str]] | None = None,
           requires: Requires = no_requirements, needs: Needs = no_needs,
           kind: Kind = memory_agent) -> Callable[[F], F]:
    """Register a system factory. ``options`` declares its ``--system-option`` keys, each
    ``key: (type, help)`` (``memgauge list`` shows them; the factory checks them with
    ``SystemContext.typed_options(name, options)``). ``requires(options)`` lists the
    optional packages those options need (checked before any model or server starts).
    ``needs(options)`` names what it needs of the run: ``NEEDS_MODEL``, ``NEEDS_PROGRAM``.
    ``kind(options)`` says what it is in the reports' comparison: ``long_context``,
    ``memory_agent`` (the default) or ``baseline``."""
    return _register("system", name, options, requires, needs, system_kind=kind)


def uses_model(options: dict[str, Any]) -> set[str]:
    """``needs`` of a system that asks the run's model whatever its options."""
    return {NEEDS_MODEL}


def scorer(name: str) -> Callable[[F], F]:
    """Register a rule scorer: a factory taking no arguments that returns a
    :class:`~memgauge.scoring.Scorer`. Every registered scorer scores every record."""
    return _register("scorer", name)


def rubric(name: str) -> Callable[[F], F]:
    """Register a judge rubric (``--judge-rubric <name>``): a factory taking no arguments
    that returns a :class:`~memgauge.scoring.Rubric`."""
    return _register("rubric", name)


def model(name: str) -> Callable[[F], F]:
    """Register a model provider; ``--model <name>:<arg>`` calls the factory with ``arg``."""
    return _register("model", name)


def captioner(name: str) -> Callable[[F], F]:
    """Register a captioner; ``--captioner <name>[:<arg>]`` calls the factory with ``arg``
    (None without a colon) and the run's ``CaptionerSettings``."""
    return _register("captioner", name)


# Built-ins imported only when asked for by name (or listed): keeps start-up light.
_LAZY = {("benchmark", "synth"): "memgauge.benchmarks.synth",
         ("model", "local"): "memgauge.models.local",
         ("system", "mem0"): "memgauge.systems.mem0_system",  # mem0ai only when used
         ("system", "letta"): "memgauge.systems.letta_system",  # letta-client, likewise
         ("system", "langmem"): "memgauge.systems.langmem_system",  # langmem, likewise
         ("system", "a-mem"): "memgauge.systems.amem_system"}  # a-mem (torch), likewise


def _load_lazy(kind: str, name: str | None = None) -> None:
    import importlib

    for (k, n), module in _LAZY.items():
        if k == kind and (name is None or n == name) and n not in _REGISTRY[kind]:
            importlib.import_module(module)


# Named by string, not imported: the registry sits below every layer that registers.
_BUILTIN_PACKAGES = ("memgauge.benchmarks", "memgauge.captioners", "memgauge.models",
                     "memgauge.scoring", "memgauge.systems")


def _load_builtins() -> None:
    # Importing the packages runs their registration decorators.
    import importlib

    for package in _BUILTIN_PACKAGES:
        importlib.import_module(package)


def _load_plugins(kind: str) -> None:
    """Import the outside packages registered under ``memgauge.<kind>s``. Only done when a
    name is not built in (or all names are listed): scanning the installed distributions'
    entry points costs tens of milliseconds of start-up."""
    group = f"memgauge.{kind}s"
    if group in _loaded_plugins:
        return
    _loaded_plugins.add(group)
    from importlib import metadata

    for ep in metadata.entry_points(group=group):
        ep.load()


def lookup(kind: str, name: str) -> Any:
    """The factory registered as ``name`` of ``kind`` (Any: each kind's factory takes its
    own arguments); a :class:`ConfigError` naming the known ones for an unknown name."""
    return registration(kind, name).factory


def registration(kind: str, name: str) -> Registration:
    """What ``name`` of ``kind`` was registered with: its factory and declarations. A
    system named by an ``http://`` or ``https://`` URL is the memory service there."""
    if kind == "system" and name.startswith(("http://", "https://")):
        import importlib  # a service (docs/memory-protocol.md); by string, as above

        return importlib.import_module("memgauge.systems.http_system").registration_for_url(
            name)
    _load_builtins()
    _load_lazy(kind, name)
    if name not in _REGISTRY[kind]:
        _load_plugins(kind)
    try:
        return _REGISTRY[kind][name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY[kind])) or "none"
        raise ConfigError(f"unknown {kind} {name!r}; known: {known}") from None


def system_kind(name: str, options: dict[str, Any]) -> str:
    """What the system called ``name`` is with ``options`` (long-context, memory agent or
    baseline), as declared where it is registered; a system not installed here (a plugin
    of another machine's run) counts as a memory agent."""
    try:
        declared = registration("system", name).system_kind
    except ConfigError:
        return MEMORY_AGENT
    return declared(options)


def names(kind: str) -> list[str]:
    _load_builtins()
    _load_lazy(kind)
    _load_plugins(kind)
    return sorted(_REGISTRY[kind])


def registrations(kind: str) -> list[Registration]:
    """Every registered plugin of ``kind`` (built in, lazy built-ins, plugins), by name."""
    return [_REGISTRY[kind][name] for name in names(kind)]


def known_names(kind: str) -> list[str]:
    """Every registered name of ``kind`` (built in, plugins, and the built-ins imported only
    when used, without importing those): what ``--help`` lists."""
    _load_builtins()
    _load_plugins(kind)
    return sorted(set(_REGISTRY[kind]) | {n for (k, n) in _LAZY if k == kind})
