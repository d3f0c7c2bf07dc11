"""What a rule reads: every fact its verdict, location and message can depend on.

Told from the rule's metadata and, for a check function, from its source; a
narrowed run uses it to judge a changed workload's neighbours only by the rules
that read what they take from it (:mod:`policylint.engine.scope`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import string
import textwrap
from typing import Any

from policylint.engine.checks import CHECKS
from policylint.engine.conditions import _referenced
from policylint.engine.rule import Rule

#: cerberus rules whose argument names other fields of the document (facts, here)
_CROSS_FIELD = ("dependencies", "excludes")


def _schema_facts(node: Any) -> set[str]:
    """Facts a ``when``/``require`` schema reads: its top-level names and every fact a comparison names."""
    if not isinstance(node, dict):
        return set()
    out = set(node) | _referenced(node)

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            for key, value in item.items():
                if key in _CROSS_FIELD:
                    if isinstance(value, str):
                        out.add(value)
                    elif isinstance(value, (list, dict)):
                        out.update(str(v) for v in value)
                walk(value)
        elif isinstance(item, list):
            for value in item:
                walk(value)

    walk(node)
    return out


def _template_names(template: str) -> set[str]:
    """The variables a message template names (facts, parameters, check variables alike)."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name}
    except ValueError:
        return set()


#: :func:`check_reads` answers taken from a cached rule set (:func:`seed_reads`), by check name
_KNOWN: dict[str, frozenset[str] | None] = {}


def check_reads(name: str) -> frozenset[str] | None:
    """The facts a registered check function reads, from its source; None when that cannot be told.

    Answers depend on the package's code alone, so a rule-cache entry (whose key
    covers the code fingerprint) keeps them all (:func:`reads_table`), and a run that
    reads the entry takes them (:func:`seed_reads`) instead of parsing the check
    modules again: about 0.04 s of every narrowed run.
    """
    if name in _KNOWN:
        return _KNOWN[name]
    return _check_reads(name)


def reads_table() -> dict[str, list[str] | None]:
    """:func:`check_reads` of every registered check as plain data: sorted fact names, or None."""
    table: dict[str, list[str] | None] = {}
    for name in sorted(CHECKS):
        reads = _check_reads(name)
        table[name] = None if reads is None else sorted(reads)
    return table


def seed_reads(table: Any) -> None:
    """Take the answers of a :func:`reads_table` kept by the rule cache; anything malformed is ignored.

    Only a table naming exactly the registered checks, each with a list of fact
    names or None, is taken: any other shape changes nothing, and every answer is
    then worked out from the source as without the cache.
    """
    if not isinstance(table, dict) or set(table) != set(CHECKS):
        return
    known: dict[str, frozenset[str] | None] = {}
    for name, reads in table.items():
        if reads is None:
            known[name] = None
        elif isinstance(reads, list) and all(isinstance(fact, str) for fact in reads):
            known[name] = frozenset(reads)
        else:
            return
    _KNOWN.clear()
    _KNOWN.update(known)


@functools.cache
def _check_reads(name: str) -> frozenset[str] | None:
    """:func:`check_reads` worked out from the check function's source.

    Only reads by a constant name count (``facts["x"]``, ``facts.get("x")``), or
    by a loop variable that takes constant names only (:func:`_loop_names`); any
    other use of the facts (a computed name, handing them to another function,
    iterating over them) makes the answer None, which callers take as "any fact".
    """
    function = CHECKS.get(name)
    if function is None:
        return None
    definition: ast.stmt | None = _definition(function)
    if definition is None:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        except (OSError, TypeError, SyntaxError):
            return None
        definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef) or not definition.args.args:
        return None
    argument = definition.args.args[0].arg
    names = _loop_names(definition, getattr(function, "__globals__", {}))
    reads: set[str] = set()
    allowed: set[int] = set()  # the Name nodes used in a recognised read
    for node in ast.walk(definition):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == argument:
            key, reader = node.slice, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == argument
            and node.args
        ):
            key, reader = node.args[0], node.func.value
        if key is None:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            reads.add(key.value)
            allowed.add(id(reader))
        elif isinstance(key, ast.Name) and key.id in names:
            reads |= names[key.id]
            allowed.add(id(reader))
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and node.id == argument and id(node) not in allowed:
            return None
    return frozenset(reads)


@functools.cache
def _definitions(filename: str) -> dict[tuple[str, int], ast.FunctionDef]:
    """Every function defined in a module file, by name and first line (its first decorator's, if any)."""
    try:
        with open(filename, "rb") as file:
            tree = ast.parse(file.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return {}
    return {
        (node.name, min([node.lineno, *(d.lineno for d in node.decorator_list)])): node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
    }


def _definition(function: Any) -> ast.FunctionDef | None:
    """The definition of ``function`` from its module's syntax tree, parsed once per module; None if not found.

    The same tree ``inspect.getsource`` would give for the function alone, without
    reading and tokenizing the module again for every function.
    """
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    return _definitions(code.co_filename).get((code.co_name, code.co_firstlineno))


def _loop_names(definition: ast.FunctionDef, globals_: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Loop variables of ``definition`` that only ever hold constant strings: name -> the strings.

    A variable counts when its one assignment in the function is the target (or
    an element of a tuple target) of ``for ... in TABLE``, where ``TABLE`` is a
    module-level name the function does not assign, whose value is a tuple of
    strings or a tuple of tuples of the same length (the column taken holding
    strings only). Anything else is left out, and a read through it makes
    :func:`check_reads` answer None.
    """
    stored: dict[str, int] = {}
    for node in ast.walk(definition):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            stored[node.id] = stored.get(node.id, 0) + 1
        elif isinstance(node, ast.arg):
            stored[node.arg] = stored.get(node.arg, 0) + 1
        elif isinstance(node, ast.ExceptHandler) and node.name:
            stored[node.name] = stored.get(node.name, 0) + 1
        elif isinstance(node, ast.alias):
            bound = node.asname or node.name.split(".")[0]
            stored[bound] = stored.get(bound, 0) + 1
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            stored[node.name] = stored.get(node.name, 0) + 1
        elif isinstance(node, ast.MatchMapping) and node.rest:
            stored[node.rest] = stored.get(node.rest, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                stored[name] = stored.get(name, 0) + 2
    out: dict[str, frozenset[str]] = {}
    for node in ast.walk(definition):
        if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Name) and node.iter.id not in stored):
            continue
        table = globals_.get(node.iter.id)
        if not isinstance(table, tuple) or not table:
            continue
        targets: list[tuple[str, int | None]] = []
        if isinstance(node.target, ast.Name):
            targets.append((node.target.id, None))
        elif isinstance(node.target, ast.Tuple) and not any(isinstance(t, ast.Starred) for t in node.target.elts):
            targets += [(t.id, i) for i, t in enumerate(node.target.elts) if isinstance(t, ast.Name)]
        for name, column in targets:
            if stored.get(name) != 1:
                continue
            if column is None:
                values = list(table)
            elif all(isinstance(row, tuple) and len(row) > column for row in table):
                values = [row[column] for row in table]
            else:
                continue
            if all(type(v) is str for v in values):
                out[name] = frozenset(values)
    return out


def facts_read(rule: Rule) -> frozenset[str] | None:
    """Every fact a rule's verdict, location and message on a view can depend on; None: any fact.

    From the rule's metadata: ``needs``, the ``when`` and ``require`` schemas
    (names and the facts their comparisons name), ``at``, the message and hint
    templates, and the facts its check function reads (:func:`check_reads`).
    Names that are parameters or check variables come along; they match no fact.
    """
    names = set(rule.needs) | _schema_facts(rule.when) | _schema_facts(rule.require)
    names |= _template_names(rule.message) | _template_names(rule.hint)
    if rule.at:
        names.add(rule.at)
    if rule.check:
        reads = check_reads(rule.check)
        if reads is None:
            return None
        names |= reads
    return frozenset(names)
