"""Configuration errors and notes name fields, and entries of mapping fields, so that the
library names what a Python caller passed and the CLI what was typed (issue 26 §3,
design 0047)."""

from __future__ import annotations

import pickle

import pytest

from memgauge.cli._common import flag_for
from memgauge.errors import ConfigFieldError, FieldText, entry, option_error


def test_an_option_error_names_the_field_and_key_or_the_flag_and_key():
    exc = option_error("top_k", "must be at least 1", 0)
    assert (str(exc), exc.field) == ("system_options top_k=0: must be at least 1",
                                     "system_options")
    assert exc.render(flag_for) == "--system-option top_k=0: must be at least 1"
    judge = option_error("n_ctx", "unknown", field="judge_model_options")
    assert judge.render(flag_for) == "--judge-model-option n_ctx: unknown"


@pytest.mark.parametrize("key", ["a{b", "x}y", "a:b!c", "mem0.url", "", "12", "a]b"])
def test_any_key_a_user_typed_is_shown_as_typed(key):
    """A key from the user (an unknown option) may hold what a format string would read as
    markup: it is shown, never a KeyError or a mangled message."""
    exc = ConfigFieldError(f"{entry('system_options', key)}=1: {{system}} has no such "
                           "option", "system_options", "system")
    assert str(exc) == f"system_options {key}=1: system has no such option"
    assert exc.render(flag_for) == f"--system-option {key}=1: --system has no such option"


def test_a_value_with_braces_is_shown_as_it_is():
    exc = option_error("caption", "use none", "'{x}'")
    assert str(exc) == "system_options caption='{x}': use none"


def test_a_note_reads_as_fields_renders_as_flags_and_pickles_as_made():
    note = FieldText("{workers} 4 reduced to 2: {concurrency} 2 is the total {{sic}}",
                     "workers", "concurrency")
    assert note == "workers 4 reduced to 2: concurrency 2 is the total {sic}"
    again = pickle.loads(pickle.dumps(note))  # a worker process's result
    assert again == note and isinstance(again, FieldText)
    assert again.render(flag_for) == "--workers 4 reduced to 2: --concurrency 2 is the total {sic}"
