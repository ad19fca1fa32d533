"""Chat models: the protocol, an OpenAI-compatible client, replay and scripted models."""

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
from .openai_compat import ModelSettings, OpenAICompatModel
from .replay import ReplayModel
from .scripted import ScriptedModel

__all__ = ["ChatModel", "GenerateConfig", "ImagePart", "Message", "ModelError", "ModelOutput",
           "ModelSettings", "OpenAICompatModel", "Part", "ReplayModel", "ScriptedModel",
           "TextPart", "create_model"]


def create_model(spec: str, settings: ModelSettings | None = None) -> ChatModel:
    """Build a model from ``provider:argument`` (e.g. ``openai:gpt-4o``, ``replay:preds.json``)."""
    from ..errors import ConfigError
    from ..registry import lookup

    provider, sep, arg = spec.partition(":")
    if not sep:
        raise ConfigError(f"model spec {spec!r} must look like provider:name "
                          "(e.g. openai:gpt-4o-mini, local:smollm2 or replay:predictions.json)")
    settings = settings or ModelSettings()
    if settings.model_options and provider in ("openai", "replay", "none"):
        raise ConfigError(f"model options ({', '.join(settings.model_options)}) apply to "
                          f"local: models; {provider}: takes none")
    return lookup("model", provider)(arg, settings)
