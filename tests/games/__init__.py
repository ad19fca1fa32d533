"""Tests of the games package (issue 15); a package so its test modules may share names with
other folders' (tests/synth/test_generate.py)."""
