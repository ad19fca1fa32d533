"""The MemEye open-ended rubric on its true five-level scale: 0, 0.25, 0.5, 0.75, 1.

The reference prompt asks for five levels but its code snaps 0.25 to 0.5 and 0.75 to 1,
inflating every mean. Here a reply's value is kept at its level: a value within 0.05 of a
level is read as that level, anything else (0.6, 3, -1) is unreadable and asked again, then
recorded as a judge failure. The wording is ours; the principles follow the reference.
"""

from __future__ import annotations

import hashlib

from ._judge import JudgeCase, read_verdict

LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
SNAP = 0.05

_PROMPT = """\
You are an impartial judge. A model answered a question about a long, multi-session \
conversation that included images. Rate how well the model's answer matches the reference \
answer on a five-level scale.

Principles:
1. Judge meaning, not wording: paraphrases, synonyms and other formats of the same value \
are equal.
2. Numbers and counts are all or nothing: the exact value scores 1, any other value 0.
3. When the reference both denies something and corrects it ("No, it was blue"), the \
answer needs both parts for full credit.
4. A person or object may be identified by name or by an unambiguous description.
5. The answer must give the kind of attribute asked for (a colour for a colour question, a \
place for a place question).
6. Naming a closely related entity is better than naming an unrelated one, but neither is \
correct.
7. For several items, give partial credit in proportion to the items that are right, and \
less when wrong items are added.
8. For an ordering or a "which one" question, only the exact item counts.
9. Do not reward length, fluency or confident tone.
10. An answer that contradicts the reference relation (left for right, before for after) \
scores 0.

Levels:
1    - fully correct: every key element of the reference, nothing contradicting it.
0.75 - mostly correct: the key element is right; a minor detail is missing or imprecise.
0.5  - partly correct: some required elements are right and others missing or wrong.
0.25 - barely correct: on the right topic or entity, but the asked-for element is wrong or \
missing.
0    - wrong, contradicting the reference, unrelated, or a refusal."""

_REPLY = """\
Reply with one JSON object and nothing else, keeping the reasoning short:
{"score": 0 or 0.25 or 0.5 or 0.75 or 1, "reasoning": "..."}"""

# 2: an echoed reply template is unreadable (1 read `"score": 0 or 0.25 …` as 0)
VERSION = "2." + hashlib.sha256(f"{_PROMPT}\x00{_REPLY}".encode()).hexdigest()[:8]


def parse_level(reply: str) -> float | None:
    """The five-level score in a reply; None when absent or not near a level."""
    return read_verdict(reply, LEVELS, SNAP)


class MemEyeRubric:
    """Five-level open-ended grading (MemEye)."""

    name = "memeye"
    version = VERSION
    levels = LEVELS

    def key(self, case: JudgeCase) -> str:
        return "open_ended"

    def build(self, case: JudgeCase, prediction: str) -> str:
        gold = case.gold if isinstance(case.gold, str) else " OR ".join(case.gold)
        return (f"{_PROMPT}\n\nQuestion: {case.question}\nReference answer: {gold}\n"
                f"Model answer: {prediction}\n\n{_REPLY}")

    def parse(self, reply: str) -> float | None:
        return parse_level(reply)
