"""The long-running metabolism process (`tidemind daemon`) and its service files.

Installed as the `tidemind_daemon` package (see pyproject): a top-level `daemon` module would
collide with python-daemon on PyPI.
"""
