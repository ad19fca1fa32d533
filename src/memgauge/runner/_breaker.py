"""The breaker: a run whose first answers show the configuration cannot work stops early."""

from __future__ import annotations

from ..errors import ConfigError
from ..schema import Record
from ._config import RunConfig


class RunStopped(ConfigError):
    """The run cannot succeed as configured (seen from its first answers); stopped early.
    What was answered is kept."""


class Breaker:
    """Stops a run whose first answers show the configuration cannot work: image parts sent
    to a model that cannot see (at once), the first few prompts all over the length limit
    (a tier that does not fit the model), or the first few questions all failing with one
    and the same cause that no retry changes (a refused key, a wrong path, a redirect, a
    certificate, the same 400) before anything was answered."""

    OVERFLOW_STREAK = 3
    SAME_CAUSE_STREAK = 3
    # what the endpoint says about every request alike (not a question's own input)
    ENDPOINT_KINDS = ("http_", "redirect", "tls", "bad_response")

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.overflows = 0
        self.answered = 0
        self.reason: str | None = None  # set once the run must stop
        self.seen = 0
        self.cause: tuple[str, str] | None = None  # the latest non-retryable endpoint failure
        self.same = 0  # how many in a row had that cause

    def _limit_text(self) -> str:
        c = self.config
        if c.max_context_tokens is None:
            return "the server's context is smaller"
        text = f"limit {c.max_context_tokens}"
        if c.is_local:
            from ..models.local import context_tokens

            n_ctx = context_tokens(c.model_options)
            if c.max_context_tokens == n_ctx - c.max_tokens:
                text += f" (n_ctx {n_ctx} minus --max-tokens {c.max_tokens} for the answer)"
        return text

    def observe(self, record: Record) -> None:
        self.seen += 1
        err = record.response.error if record.response else None
        if err is None:
            self.answered += 1
            return
        if self.reason:
            return
        if err.kind == "no_vision":
            self.reason = f"stopped after {self.seen} question(s): {err.message}"
        elif (self.answered == 0 and not err.retryable
              and err.kind.startswith(self.ENDPOINT_KINDS)):
            cause = (err.kind, err.message)
            self.same = self.same + 1 if cause == self.cause else 1
            self.cause = cause
            if self.same >= self.SAME_CAUSE_STREAK:
                self.reason = (f"stopped: the first {self.same} questions all failed with "
                               f"the same cause, which no retry changes, and none was "
                               f"answered: {err.kind}: {err.message}")
        elif err.kind == "context_overflow" and self.answered == 0:
            self.overflows += 1
            if self.overflows >= self.OVERFLOW_STREAK and self.config.overflow == "error":
                c = self.config
                what = f"tier {c.tier} " if c.tier else ""
                server_ctx = record.response.meta.get("context_tokens")
                if server_ctx:  # the server counted and refused
                    last = (f"{record.input_tokens} tokens by the server's count; its context "
                            f"is {server_ctx}")
                else:
                    last = (f"{record.input_tokens} tokens counted with {c.tokenizer}; "
                            f"{self._limit_text()}")
                self.reason = (
                    f"stopped: the {what}prompts do not fit the model; the first "
                    f"{self.overflows} were all over the limit (the last: {last}). Use a "
                    "smaller tier, --overflow drop-oldest, a retrieval system, or a larger "
                    "context (--model-option n_ctx=N for local: models)")

