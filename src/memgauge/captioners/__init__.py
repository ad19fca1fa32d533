"""Captioners: text for images, for every system that reads text (design 0023)."""

from . import file, gold, ocr, vlm  # noqa: F401  (registers the captioners)
from ._base import (
    PROMPTS,
    Caption,
    CaptionCounts,
    Captioner,
    CaptionerSettings,
    CaptionFailed,
    CaptionStage,
    ModelCaptioner,
    create_captioner,
    episode_images,
)

__all__ = ["PROMPTS", "Caption", "CaptionCounts", "CaptionFailed", "CaptionStage", "Captioner",
           "CaptionerSettings", "ModelCaptioner", "create_captioner", "episode_images"]
