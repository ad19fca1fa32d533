"""Chat models: the protocol, an OpenAI-compatible client, replay and scripted models."""

from .._secrets import redact_urls
from ..errors import ConfigError
from ..registry import lookup
from . import none, openai_compat, replay  # noqa: F401  (registers the providers)
from ._base import (
    ChatModel,
    GenerateConfig,
    ImagePart,
    Message,
    ModelError,
    ModelOutput,
    Part,
    TextPart,
)
from ._capabilities import (
    CacheIdentified,
    ChoiceConstraining,
    Closable,
    Configured,
    EndpointChecked,
    EndpointReporting,
    KnownContext,
    OpenAIEndpoint,
    OwnTokenizer,
    Preflighted,
    Releasable,
    SendClock,
    aclose_if_closable,
    release_if_releasable,
)
from .openai_compat import (
    BASE_URL_ENV,
    HOSTED_OPENAI,
    ModelSettings,
    OpenAICompatModel,
    resolve_base_url,
)
from .replay import ReplayModel
from .scripted import ScriptedModel

__all__ = ["CacheIdentified", "ChatModel", "ChoiceConstraining", "Closable", "Configured",
           "EndpointChecked", "EndpointReporting",
           "GenerateConfig", "ImagePart", "KnownContext", "Message", "ModelError",
           "ModelOutput", "ModelSettings", "OpenAICompatModel", "OpenAIEndpoint",
           "OwnTokenizer", "Part", "Preflighted", "Releasable", "ReplayModel",
           "ScriptedModel", "SendClock", "TextPart", "aclose_if_closable", "create_model",
           "release_if_releasable"]


def create_model(spec: str, settings: ModelSettings | None = None) -> ChatModel:
    """Build a model from ``provider:argument`` (e.g. ``openai:gpt-4o``, ``replay:preds.json``)."""
    provider, sep, arg = spec.partition(":")
    if not sep:
        raise ConfigError(f"model spec {spec!r} must look like provider:name "
                          "(e.g. openai:gpt-4o-mini, local:smollm2 or replay:predictions.json)")
    settings = settings or ModelSettings()
    if settings.model_options and provider in ("openai", "replay", "none"):
        raise ConfigError(f"model options ({', '.join(settings.model_options)}) apply to "
                          f"local: models; {provider}: takes none")
    return lookup("model", provider)(arg, settings)


def endpoint_of(spec: str, base_url: str | None) -> str:
    """Where a model's requests go, in words, for the line a run starts with: the URL and
    where it came from (a flag, ``$OPENAI_BASE_URL``, or the hosted API by default), so an
    evaluation meant to stay local cannot send data out unseen."""
    provider = spec.partition(":")[0]
    if provider == "openai":
        url, source = resolve_base_url(base_url)
        if source == "hosted":
            return (f"{HOSTED_OPENAI} (the hosted OpenAI API: no --base-url, no "
                    f"${BASE_URL_ENV})")
        return f"{redact_urls(url)} (from " + ("--base-url)" if source == "flag"
                                                  else f"${BASE_URL_ENV})")
    if provider == "local":
        return "a llama.cpp server this run starts on 127.0.0.1 (this machine)"
    if provider in ("none", "replay"):
        return "none (no request is sent)"
    return f"as the {provider!r} provider chooses"
