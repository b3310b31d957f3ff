"""TideMind: a local-first memory for agents. The public face is `tidemind.memory.Memory`."""

__version__ = "0.1.0"
