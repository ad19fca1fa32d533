"""Question templates over game timelines. Adding one is a decorated function in a module
here; adding a module is one import line in ``_load_all``."""

from ._base import (
    ABILITIES,
    ANSWER_TYPES,
    GAME_KINDS,
    NOT_ANSWERABLE,
    GameQuestion,
    Template,
    all_templates,
    template,
    templates_for,
)

__all__ = ["ABILITIES", "ANSWER_TYPES", "GAME_KINDS", "NOT_ANSWERABLE", "GameQuestion",
           "Template", "all_templates", "template", "templates_for"]


def _load_all() -> None:
    # Importing the modules runs their @template decorators. Each module appends its import
    # here (one line), e.g. ``from . import crafter``.
    from . import crafter, life, text  # noqa: F401
