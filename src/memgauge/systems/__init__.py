"""Systems under test: the MemorySystem protocol and the built-in systems."""

from . import clue_views, full_context, oracle, rag  # noqa: F401  (registers the systems)
from ._base import MemorySystem, PromptSizer, SystemContext, SystemFactory
from ._context import (
    CONTEXT_MODES,
    INSTRUCTIONS,
    QUESTION_TEMPLATE,
    SYSTEM_PROMPT,
    Prompt,
    build_prompt,
    clean_prediction,
)
from .fact_memory import FactMemory  # noqa: F401  (registers fact-memory)
from .full_context import FullContext
from .recurrent_memory import RecurrentMemory  # noqa: F401  (registers recurrent-memory)
from .state_memory import StateMemory  # noqa: F401  (registers state-memory)
from .summary_memory import SummaryMemory  # noqa: F401  (registers summary-memory)

__all__ = ["CONTEXT_MODES", "INSTRUCTIONS", "QUESTION_TEMPLATE", "SYSTEM_PROMPT", "FullContext",
           "MemorySystem", "Prompt", "PromptSizer", "SystemContext", "SystemFactory",
           "build_prompt",
           "clean_prediction"]
