"""The built-in games: one line each (module, factory)."""


# register_env("crafter", "memgauge.games.envs.crafter", "open_crafter")
