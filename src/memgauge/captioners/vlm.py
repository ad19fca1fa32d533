"""``openai:<model>`` / ``local:<gguf>``: a vision-language model writes the caption.

Two prompts, in our words: ``dense`` (a detailed description, after MemEye's dense
captions) and ``task`` (the details a later memory question could ask about). The prompt's
digest is the captioner's version, so a changed prompt never reuses old captions.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..errors import ConfigFieldError, entry, literal
from ..media import ImageEncoder
from ..models import (
    CacheIdentified,
    GenerateConfig,
    ImagePart,
    Message,
    ModelError,
    ModelSettings,
    TextPart,
    aclose_if_closable,
    release_if_releasable,
)
from ..models import create_model as _create_model
from ..models.local import OUTPUT_OPTIONS
from ..registry import captioner
from ..schema import ImageRef
from ._base import Caption, CaptionerSettings, CaptionFailed, argument

PROMPT_TEXT = {
    "dense": (
        "Describe this image in detail for someone who cannot see it. Copy every piece of "
        "visible text exactly (names, numbers, dates, times, prices, codes). Name the objects "
        "and people, with their colours, counts and positions, and the setting. Plain "
        "sentences, no preamble."),
    "task": (
        "This image was shared in a conversation. Later, questions about it will be asked "
        "from memory alone, so write down the facts such a question could ask about: the "
        "exact text and numbers shown, quantities, colours, brands and names, dates and "
        "times, and what tells this image apart from a similar one. Be specific; do not "
        "guess what is not visible. Plain sentences, no preamble."),
}


def _version(prompt_name: str, prompt: str, model: Any) -> str:
    """The prompt's digest, and, when a local server's options change what it writes (its
    projector, by content; its chat template), their digest too. Options that only change
    speed (threads, slots, n_ctx, flash_attn) leave it alone, so the cache still serves."""
    version = f"{prompt_name}-{hashlib.sha256(prompt.encode()).hexdigest()[:16]}"
    identity = model.cache_identity() if isinstance(model, CacheIdentified) else {}
    output = {k: identity[k] for k in OUTPUT_OPTIONS if identity.get(k)}
    if output:
        version += "-" + hashlib.sha256(json.dumps(output, sort_keys=True).encode()
                                        ).hexdigest()[:16]
    return version


class VlmCaptioner:
    cacheable = True
    needs_pixels = True

    def __init__(self, spec: str, settings: CaptionerSettings) -> None:
        self.name = spec
        self.prompt_name = settings.prompt
        self.prompt = PROMPT_TEXT[settings.prompt]
        self.kind = settings.prompt  # "dense" or "task"
        self.generate_config = GenerateConfig(max_tokens=settings.max_tokens, temperature=0.0)
        self.model_options = dict(settings.model_options)
        policy = settings.image_policy
        # The captioner's own client: its endpoint, no response cache (captions are cached
        # by the stage under kind "caption", keyed on the image, not on the request).
        self.model = _create_model(spec, ModelSettings(
            base_url=settings.base_url, api_key_env=settings.api_key_env,
            concurrency=settings.concurrency, timeout_s=settings.timeout_s,
            max_attempts=settings.max_attempts, retry_base_s=settings.retry_base_s,
            image_policy=policy, encoder=ImageEncoder(policy), cache=None,
            model_options=self.model_options, options_field="captioner_model_options"))
        self.version = _version(self.prompt_name, self.prompt, self.model)

    def describe(self) -> dict[str, Any]:
        out = {"model": self.model.describe(), "prompt": self.prompt_name,
               "max_tokens": self.generate_config.max_tokens}
        if self.model_options:
            out["model_options"] = dict(sorted(self.model_options.items()))
        return out

    async def caption(self, ref: ImageRef, sha256: str | None) -> Caption | None:
        messages = [Message("user", [ImagePart(ref), TextPart(self.prompt)])]
        try:
            out = await self.model.generate(messages, self.generate_config)
        except ModelError as exc:
            raise CaptionFailed(f"{exc.kind}: {exc.message}") from None
        text = out.text.strip()
        if not text:  # never an empty caption passed off as one
            raise CaptionFailed(f"{self.name} replied with no text")
        return Caption(kind=self.kind, text=text)

    async def aclose(self) -> None:
        await aclose_if_closable(self.model)

    def release(self) -> None:
        """A local model's server, released without awaiting (a failed setup)."""
        release_if_releasable(self.model)


@captioner("openai")
def make_openai(arg: str | None, settings: CaptionerSettings) -> VlmCaptioner:
    return VlmCaptioner("openai:" + argument("openai", arg, "model"), settings)


@captioner("local")
def make_local(arg: str | None, settings: CaptionerSettings) -> VlmCaptioner:
    gguf = argument("local", arg, "gguf")
    if not settings.model_options.get("mmproj"):
        # llama.cpp sees images only through a projector: without one every image would
        # fail in turn, after the server started, with a fix that names the wrong flag.
        raise ConfigFieldError(f"{{captioner}} local:{literal(gguf)} cannot see images "
                               "without its projector: give "
                               f"{entry('captioner_model_options', 'mmproj')}=FILE (a VLM "
                               "GGUF's mmproj), or use {context_mode} text / the data's "
                               "captions", "captioner", "captioner_model_options",
                               "context_mode")
    return VlmCaptioner("local:" + gguf, settings)
