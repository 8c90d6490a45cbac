"""Every scheduler, behind one registry: `create(name, seed=..., budget_s=...)`, `names()`.

Each module listed in `_BUILTINS` defines one scheduler class decorated with `@register`;
adding a scheduler is one module and one name here.
"""

import importlib

from heterps_core.schedulers.registry import create, get, names, register

__all__ = ["create", "get", "names", "register"]

_BUILTINS = (
    "exact",
    "brute",
    "homogeneous",
    "heuristic",
    "greedy",
    "genetic",
    "bayes",
    "random_search",
    "rl",
)

for _module in _BUILTINS:
    importlib.import_module(f"heterps_core.schedulers.{_module}")
