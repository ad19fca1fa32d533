"""Systems under test: the MemorySystem protocol and the built-in systems."""

from . import full_context, oracle, rag  # noqa: F401  (registers the systems)
from ._base import MemorySystem, SystemContext, SystemFactory
from ._context import (
    CONTEXT_MODES,
    INSTRUCTIONS,
    QUESTION_TEMPLATE,
    SYSTEM_PROMPT,
    Prompt,
    build_prompt,
    clean_prediction,
)
from .full_context import FullContext

__all__ = ["CONTEXT_MODES", "INSTRUCTIONS", "QUESTION_TEMPLATE", "SYSTEM_PROMPT", "FullContext",
           "MemorySystem", "Prompt", "SystemContext", "SystemFactory", "build_prompt",
           "clean_prediction"]
