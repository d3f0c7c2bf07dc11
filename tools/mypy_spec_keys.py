"""mypy plugin: ``.get`` of a key a TypedDict does not have is an error, as a subscript is.

mypy reports ``spec["reservedGPUs"]`` on a TypedDict without that key, but, as
the typing spec allows, it accepts ``spec.get("reservedGPUs")`` and types it
``object``. policylint reads its document specs (``policylint/model/specs.py``)
mostly with ``.get``, so a misspelt key would pass unseen: this plugin reports a
literal key the TypedDict lacks, with the error code mypy gives a subscript
(``typeddict-item``). Enabled in pyproject.toml (``[tool.mypy] plugins``).

``"key" in spec`` is not checked: mypy discards errors raised while it checks
``__contains__`` (it tries a fallback), so a plugin cannot report them there.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.errorcodes import TYPEDDICT_ITEM
from mypy.nodes import StrExpr
from mypy.plugin import MethodContext, Plugin

try:  # mypy's own typing of TypedDict.get; internal, so a mypy without it keeps its default
    from mypy.plugins.default import typed_dict_get_callback
except ImportError:  # pragma: no cover - depends on the mypy release
    def typed_dict_get_callback(ctx: MethodContext) -> Type:
        return ctx.default_return_type
from mypy.types import Type, TypedDictType, get_proper_type

_GET = "typing.Mapping.get"


def _get(ctx: MethodContext) -> Type:
    spec = get_proper_type(ctx.type)
    key = ctx.args[0][0] if ctx.args and len(ctx.args[0]) == 1 else None
    if isinstance(spec, TypedDictType) and isinstance(key, StrExpr) and key.value not in spec.items:
        name = spec.fallback.type.name if not spec.is_anonymous() else "TypedDict"
        known = ", ".join(f'"{k}"' for k in spec.items)
        ctx.api.fail(f'TypedDict "{name}" has no key "{key.value}" (keys: {known})', ctx.context, code=TYPEDDICT_ITEM)
    return typed_dict_get_callback(ctx)  # mypy's own return type for it


class SpecKeys(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _get if fullname == _GET else None


def plugin(version: str) -> type[Plugin]:
    return SpecKeys
