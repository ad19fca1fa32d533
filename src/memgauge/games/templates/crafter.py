"""The Crafter templates (design 0032, "Crafter templates"), one module per kind of
question; importing this registers them all."""

from . import crafter_events, crafter_patterns, crafter_recall, crafter_spatial

__all__ = ["crafter_events", "crafter_patterns", "crafter_recall", "crafter_spatial"]
