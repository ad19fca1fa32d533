"""The text-game templates (TextWorld, Jericho), split by ability; importing this module
registers them all. The list of ids is in design 0032, "Text-game templates"."""

from . import text_adversarial, text_patterns, text_recall, text_spatial  # noqa: F401
from ._text_timeline import TextTimeline

__all__ = ["TextTimeline"]
