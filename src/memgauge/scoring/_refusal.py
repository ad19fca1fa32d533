"""Refusal detection from an explicit, documented pattern set.

A refusal is an answer that declines to answer because the history does not hold the fact
("Insufficient information", "I don't know", "The conversation does not mention it"). The
patterns are deliberately explicit rather than clever: each one is a phrase that practically
never occurs inside a real answer. Words that *do* occur in real answers are matched only when
they are the whole answer ("unknown" is a refusal; "Unknown Pleasures by Joy Division" is not).
"No", "none" and "there were no cats" are answers, never refusals.

An empty or missing prediction is *not* a refusal: it is no answer at all (a failed or empty
generation), and counting it as a refusal would reward silence on refusal questions.
"""

from __future__ import annotations

import re

from ._hedge import LONG_REPLY_WORDS, first_sentence, stated_answer

# Typographic apostrophes and quotes are folded to ASCII before matching, so "I don’t know"
# and "I don't know" behave the same.
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'", "`": "'", "´": "'"})

_NOT = r"(?: not|n't)"  # glued to its verb: "does not" / "doesn't"
_INFO = r"(?:information|info|details?|data|context|records?|knowledge|evidence)"

# Phrases searched anywhere in the (lowercased, apostrophe-folded, space-collapsed) answer.
REFUSAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # "Insufficient information", "insufficient details to answer"
        rf"\binsufficient {_INFO}\b",
        # "There is not enough information", "I don't have enough context"
        rf"(?:\bnot|n't)(?: have)? enough {_INFO}\b",
        # "I don't have any information about", "the history does not contain the details"
        (rf"\b(?:do|does|did){_NOT} (?:have|contain|include|provide|give)"
         rf"(?: (?:any|enough|sufficient|the|that|this|specific|relevant|such))* {_INFO}\b"),
        (r"\blacks?(?: (?:any|the|enough|sufficient|specific|relevant))*"
         r" (?:information|details|context|data)\b"),
        # "No information available", "there is no mention of"
        (r"\bno (?:(?:relevant|specific|such|further|additional|available) )?"
         r"(?:information|info|details|data|records?|mention)\b"),
        # "I don't know", "I do not recall", "I can't remember"
        r"\bi (?:do not|don't|dont|cannot|can't|can not) (?:know|recall|remember)\b",
        # "I cannot determine", "we are unable to tell"
        (r"\b(?:i|we) (?:cannot|can't|can not|could not|couldn't|am unable to|'m unable to"
         r"|are unable to|am not able to|'m not able to|are not able to)"
         r" (?:determine|tell|answer|say|find|know|infer|confirm|recall|identify|verify"
         r"|be sure)\b"),
        # "It cannot be determined", "this can't be answered"
        (r"\b(?:cannot|can't|can not|could not|couldn't) be (?:determined|answered|inferred|known"
         r"|confirmed|verified|identified|established)\b"),
        # "Unable to determine", "it is not possible to tell", "no way to know"
        (r"\b(?:not possible|impossible|unable|no way) to"
         r" (?:determine|tell|know|say|answer|infer)\b"),
        # "The conversation does not mention ...", "the history doesn't specify"
        (r"\b(?:conversations?|chats?|context|history|dialog(?:ue)?s?|sessions?|transcripts?"
         r"|records?|memory|memories|messages?|information|text|user|it) (?:does|do|did)"
         rf"{_NOT} (?:mention|specify|say|state|include|contain|provide|indicate|reveal|tell)\b"),
        # "not mentioned", "isn't specified", "never stated"
        (r"(?:\bnot|n't|\bnever)(?: been)?(?: (?:explicitly|specifically|directly|clearly))? "
         r"(?:mentioned|specified|stated|discussed|disclosed|indicated)\b"),
        # "not clear from the conversation"
        r"\b(?:not clear|unclear) from (?:the|this|our|my|your)\b",
        # "unanswerable", "not answerable", "Not_Answerable", "not-answerable"
        r"\b(?:unanswerable|not[ _-]answerable)\b",
    )
)

# Answers that are refusals only when they are the whole answer (after stripping punctuation):
# each also occurs inside real answers ("Unknown Pleasures", "N/A rating").
_WHOLE_ANSWER = re.compile(
    r"[\W_]*(?:unknown|n/a|n\.a\.?|not applicable|not known|no idea|idk"
    r"|(?:i'm |i am )?not sure)[\W_]*"
)


def is_refusal(text: str | None) -> bool:
    """True when ``text`` declines to answer, by :data:`REFUSAL_PATTERNS` or a whole-answer
    refusal word ("unknown", "N/A"). ``None`` and empty text return False (no answer is not a
    refusal)."""
    if not text or not text.strip():
        return False
    s = " ".join(text.translate(_APOSTROPHES).lower().split())
    if _WHOLE_ANSWER.fullmatch(s):
        return True
    return any(p.search(s) for p in REFUSAL_PATTERNS)




def reads_as_refusal(text: str | None) -> bool:
    """A refusal as the rule scorer reads it (design 0038): :func:`is_refusal` of the whole
    reply when it is short; of a long reply, only its first sentence or its stated answer
    counts. A dump of retrieved text that happens to quote "I don't remember" somewhere is
    not a refusal."""
    if not is_refusal(text):
        return False
    assert text is not None
    if len(text.split()) <= LONG_REPLY_WORDS:
        return True
    return is_refusal(first_sentence(text)) or is_refusal(stated_answer(text))
