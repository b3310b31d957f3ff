"""The TideMind desktop app (PySide6). Installed as `tidemind_desktop` (see pyproject).

It reads and writes only through `tidemind.memory.Memory`, in-process: no SQL of its own.
"""
