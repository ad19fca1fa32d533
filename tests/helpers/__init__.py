"""Helpers shared by the tests: loopback stub servers (OpenAI-compatible, scripted, Batch
API), dataset writers, report run folders, memory histories, a memory-protocol service in a
thread and a Ctrl-C child launcher. Importable as ``helpers.<module>`` because pytest puts
``tests/`` on the path (``pythonpath`` in pyproject.toml's ``[tool.pytest.ini_options]``)."""
