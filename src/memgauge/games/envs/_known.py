"""The built-in games: one line each (module, factory)."""

from ._base import register_env

register_env("crafter", "memgauge.games.envs.crafter", "open_crafter")
register_env("textworld", "memgauge.games.envs.textworld", "open_textworld")
register_env("jericho", "memgauge.games.envs.jericho", "open_jericho")
