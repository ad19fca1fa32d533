"""Every name a run is given, and the optional packages its system needs, checked before
anything starts: a typo in ``--system`` next to ``--model local:...`` used to surface only
after the llama.cpp server's start-up (about two minutes on a loaded machine), and a missing
``bm25s`` only as an error on every question (issue 25 §5)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigFieldError, literal
from ..registry import NEEDS_MODEL, lookup, missing_extras, registration


def _provider(spec: str | None, field: str) -> str | None:
    if not spec:
        return None
    provider, sep, _ = spec.partition(":")
    if not sep:
        raise ConfigFieldError(f"{{{field}}} {literal(repr(spec))} must look like "
                               "provider:name (e.g. openai:gpt-4o-mini or local:smollm2)",
                               field)
    return provider


def check_names(config: Any) -> None:
    """Look up the benchmark, system, model, judge and captioner by name, and the packages
    the system's options need; a :class:`ConfigFieldError` naming the field for the first
    that is wrong. Nothing is loaded, started or sent."""
    lookup("benchmark", config.bench)
    registration("system", config.system)
    for kind, spec, field in (("model", config.model, "model"),
                              ("model", config.judge, "judge"),
                              ("captioner", config.captioner, "captioner")):
        provider = spec.partition(":")[0] if kind == "captioner" and spec else (
            _provider(spec, field))
        if provider:
            lookup(kind, provider)
    if (NEEDS_MODEL in system_needs(config)
            and _provider(config.model, "model") == "none"):
        raise ConfigFieldError(f"{{system}} {literal(config.system)} asks its model for "
                               "answers (or ingest), and {model} none: is no model: name one "
                               "({model} openai:<name> with {base_url}, or {model} "
                               "local:smollm2)", "model", "system", "base_url")
    requires = registration("system", config.system).requires
    missing_extras(requires(config.effective_system_options()),
                   f"{{system}} {literal(config.system)}", "system")


def system_needs(config: Any) -> set[str]:
    """What the system declares it needs of the run for its options (design 0043);
    nothing for a system registered without ``needs`` (a plugin's, a test's)."""
    return registration("system", config.system).needs(config.effective_system_options())
