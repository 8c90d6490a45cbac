"""Every scheduler, behind one registry: `registry.get(name)`, `registry.names()`.

Each module below defines one scheduler class decorated with `@register`.
"""

from heterps_core.schedulers.registry import create, get, names, register

__all__ = ["create", "get", "names", "register"]
