"""The PySide6 desktop app: panes over the engine facade. Only this package imports Qt."""
