"""The built-in games: one line each (module, factory)."""

from ._base import register_env

register_env("crafter", "memgauge.games.envs.crafter_env", "open_crafter")
register_env("textworld", "memgauge.games.envs.textworld_env", "open_textworld")
register_env("jericho", "memgauge.games.envs.jericho_env", "open_jericho")
