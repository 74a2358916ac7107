"""Lazy package exports (PEP 562): `from dpcore.figures import x` imports only x's module.

Why: a Streamlit page that draws one figure or computes one score should not wait for torch or umap
to import for another; packages list their public names once, by module, and this builds the
module-level `__getattr__`, `__dir__` and `__all__` from that list.
"""
from __future__ import annotations

from importlib import import_module


def lazy_exports(package: str, exports: dict[str, list[str]], namespace: dict):
    """(`__getattr__`, `__dir__`, `__all__`) for `package` whose `exports` map module → names;
    a name is imported on first use and cached in the package's `namespace` (its globals())."""
    module_of = {name: module for module, names in exports.items() for name in names}
    names = sorted(module_of)

    def __getattr__(name: str):
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module_of[name]}"), name)
        namespace[name] = value
        return value

    def __dir__():
        return names

    return __getattr__, __dir__, names
