"""Settings the user changed in the window over an environment variable ("app overrides").

Kept in the window's QSettings, not in the config file: the environment wins over the file, so a
value saved there would be shadowed. Applied when the window starts; a --set flag still wins.
Light on purpose (no openai import): the window reads these before it is shown.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from PySide6.QtCore import QSettings

from desktop_mem.engine.config import SETTINGS, Config

OVERRIDES_GROUP = "overrides"
APP_SOURCE = "this app's settings (overrides the environment)"


def app_overrides(settings: QSettings) -> dict[str, str]:
    """Values the user set in the window over an environment variable, by setting name."""
    settings.beginGroup(OVERRIDES_GROUP)
    try:
        return {key.replace("/", "."): str(settings.value(key)) for key in settings.allKeys()}
    finally:
        settings.endGroup()


def apply_app_overrides(config: Config, settings: QSettings, env: Mapping[str, str] | None = None) -> Config:
    """The config with the app's overrides on top of the environment (a --set flag still wins)."""
    env = os.environ if env is None else env
    names = {s.name: s for s in SETTINGS}
    chosen = {name: value for name, value in app_overrides(settings).items()
              if name in names and config.source(name) != "flag"
              and names[name].env is not None and env.get(names[name].env or "")}
    return config.with_overrides(chosen, source=APP_SOURCE) if chosen else config
