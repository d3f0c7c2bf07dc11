"""The architecture contract: which part of policylint may import which, read from the installed package.

Every module is parsed with ``ast`` (nothing is imported), its imports at module
level, inside functions and under ``TYPE_CHECKING`` alike, relative ones
resolved (``tests/import_graph.py``). The tables below are the contract; extend
them as stages become packages (model, measure, engine ...): a layer names its
modules and the layers it may import from, and everything else in the package is
above it. ``python tools/architecture_report.py`` prints the module sizes and
every import cycle of the whole package.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import policylint
from import_graph import Import, Package, in_layer, read_package, strongly_connected


@dataclass(frozen=True)
class Layer:
    """Modules (a module or a package and everything in it) and the layers they may import from."""

    modules: tuple[str, ...]
    #: the layers below it that it may import; None: any layer below it
    may_import: tuple[str, ...] | None = None


#: The layers, lowest first: every module of policylint is in exactly one
#: (``test_every_module_has_a_layer``). A layer imports its own modules and the layers
#: below it - those it lists in ``may_import``, or, where it lists none, any layer
#: below it. No layer imports one above it. The order is the pipeline's: files and
#: numbers at the bottom, then the model, measuring, judging, editing, planning,
#: exporting, reporting, the commands and the command line on top.
LAYERS: dict[str, Layer] = {
    "errors": Layer(("policylint.errors",), may_import=()),
    # the resident server's socket, fingerprint and fork (standard library only)
    "resident": Layer(("policylint.resident", "policylint.resident_server"), may_import=()),
    # the version and API version (``policylint/__init__.py``)
    "version": Layer(("policylint",), may_import=()),
    # how facts are declared (fact sheets): below every stage that declares some
    "facts": Layer(("policylint.facts",), may_import=()),
    "finding": Layer(("policylint.finding",), may_import=()),
    # reading user files safely, the bundled resources, the one writer
    "files": Layer(
        ("policylint.safeio", "policylint.resources", "policylint.writer", "policylint.writer_transaction"),
        may_import=("errors",),
    ),
    "calc": Layer(("policylint.calc",), may_import=("errors",)),
    # traces.py is the readers' public face, as the rest of policylint imports them
    "readers": Layer(("policylint.readers", "policylint.traces"), may_import=("calc", "errors")),
    # one reader's series through the calculator (analyse, BandReport), and bands.py re-exporting both
    "analysis": Layer(("policylint.analysis", "policylint.bands"), may_import=("calc", "readers", "errors")),
    # the bundled rules' metadata (codes, severities, fixes, what checks provide)
    "catalogue": Layer(("policylint.catalogue",), may_import=("errors", "finding", "files")),
    # the sealed entry store and trace digests: nothing of the pipeline
    "cache": Layer(("policylint.cache",), may_import=("errors", "version", "files", "readers")),
    # load, validate, resolve (scheduler manifests included), configuration
    "model": Layer(("policylint.model",)),
    "measure": Layer(("policylint.measure",)),
    "engine": Layer(("policylint.engine",)),
    "edit": Layer(("policylint.edit",)),
    # a run's shared setup: configuration, rules and the lint, for the commands that judge
    "session": Layer(("policylint.session",)),
    "plan": Layer(("policylint.plan",)),
    "export": Layer(("policylint.export",)),
    "report": Layer(("policylint.report",)),
    "commands": Layer(("policylint.commands",)),
    # the command line imports a command by name only when it runs (importlib, see cli.COMMANDS)
    "cli": Layer(("policylint.cli", "policylint.__main__", "policylint.serve")),
}

#: Layers none of whose modules may take part in an import cycle (of any kind of import).
ACYCLIC = ("errors", "calc", "readers", "analysis", "facts")

#: Import cycles known to exist in an acyclic layer today, each as its set of modules.
#: The test fails on any other cycle there, and on a listed one that is gone (drop
#: it from this list then). Empty: the readers' cycle (convert/filters -> table for
#: ``Rows``) ended when ``Rows`` moved down to readers/rows.py.
KNOWN_CYCLES: list[frozenset[str]] = []

#: Layers whose modules may import modules of policylint only at module level: an
#: import inside a function must not be the way round a cycle.
NO_LAZY_IMPORTS = ("calc", "facts")

#: Longest module, in lines, of each layer that has a limit.
MAX_LINES = {"calc": 500, "readers": 500}


@pytest.fixture(scope="module")
def package() -> Package:
    """The installed package's import graph (the wheel in CI, the checkout in a developer's venv)."""
    return read_package(Path(policylint.__file__).parent, "policylint")


def layer_of(module: str) -> str | None:
    """The layer of ``module``: the one naming it or its closest package (the root package only by name)."""
    best: tuple[int, str] | None = None
    for name, layer in LAYERS.items():
        for prefix in layer.modules:
            inside = module == prefix or (prefix != "policylint" and module.startswith(prefix + "."))
            if inside and (best is None or len(prefix) > best[0]):
                best = (len(prefix), name)
    return best[1] if best else None


def _modules(package: Package, layer: str) -> list[str]:
    return [m for m in package.files if layer_of(m) == layer]


def _listing(imports: list[Import]) -> str:
    return "\n".join(f"  {imp.describe()} (layer {layer_of(imp.target) or 'above'})" for imp in imports)


def test_every_layer_has_modules(package: Package) -> None:
    """A layer table that names no module checks nothing: a renamed package must be renamed here too."""
    empty = [name for name in LAYERS if not _modules(package, name)]
    assert not empty, f"layers without a module in {package.root}: {empty}"
    unknown = {d for layer in LAYERS.values() for d in layer.may_import or ()} - set(LAYERS)
    assert not unknown, f"layers named in may_import but not defined: {sorted(unknown)}"


def test_every_module_has_a_layer(package: Package) -> None:
    """A module in no layer would be held by nothing: each is in exactly one."""
    homeless = sorted(m for m in package.files if layer_of(m) is None)
    assert not homeless, f"modules in no layer (add them to LAYERS in tests/test_architecture.py): {homeless}"
    prefixes = [prefix for layer in LAYERS.values() for prefix in layer.modules]
    assert len(prefixes) == len(set(prefixes)), "a module or package is named by two layers"


def _below(layer: str) -> set[str]:
    order = list(LAYERS)
    return set(order[: order.index(layer)])


def test_may_import_names_only_lower_layers() -> None:
    """The table itself is ordered: a layer may list only layers below it."""
    upward = {name: sorted(set(layer.may_import or ()) - _below(name)) for name, layer in LAYERS.items()}
    assert not any(upward.values()), f"layers listing a layer that is not below them: { {k: v for k, v in upward.items() if v} }"


@pytest.mark.parametrize("layer", list(LAYERS))
def test_layer_imports_only_below(package: Package, layer: str) -> None:
    """A layer imports only from itself and the layers below it (those it lists, where it lists some)."""
    listed = LAYERS[layer].may_import
    allowed = {layer, *(listed if listed is not None else _below(layer))}
    bad = [
        imp
        for imp in package.imports
        if layer_of(imp.source) == layer and imp.target in package.files and layer_of(imp.target) not in allowed
    ]
    assert not bad, (
        f"{layer} may import only from {', '.join(sorted(allowed))} (LAYERS in tests/test_architecture.py);"
        f" these imports reach elsewhere:\n{_listing(bad)}"
    )


def test_no_cycle_in_the_acyclic_layers(package: Package) -> None:
    """No module of an acyclic layer is in an import cycle, besides the listed known ones."""
    touching = {
        frozenset(c) for c in package.cycles() if any(layer_of(m) in ACYCLIC for m in c)
    }
    new = touching - set(KNOWN_CYCLES)
    gone = set(KNOWN_CYCLES) - touching
    messages = []
    for cycle in sorted(new, key=sorted):
        members = sorted(m for m in cycle if layer_of(m) in ACYCLIC)
        shown = ", ".join(sorted(cycle)) if len(cycle) < 12 else f"{len(cycle)} modules, among them {', '.join(members)}"
        messages.append(f"import cycle through {shown}; the shortest ones through each:")
        for module in members[:5]:
            messages.append(_listing(package.shortest_cycle(module)) + "\n")
    for cycle in sorted(gone, key=sorted):
        messages.append(f"known cycle {', '.join(sorted(cycle))} is gone: remove it from KNOWN_CYCLES")
    assert not messages, "\n".join(messages)


def test_no_lazy_imports_of_the_package(package: Package) -> None:
    """In the listed layers every import of policylint runs when the module loads."""
    lazy = [
        imp
        for imp in package.imports
        if layer_of(imp.source) in NO_LAZY_IMPORTS and imp.kind != "module" and imp.target in package.files
    ]
    assert not lazy, f"imports inside functions or under TYPE_CHECKING:\n{_listing(lazy)}"


@pytest.mark.parametrize("layer", list(MAX_LINES))
def test_modules_are_small(package: Package, layer: str) -> None:
    limit = MAX_LINES[layer]
    big = {m: package.lines[m] for m in _modules(package, layer) if package.lines[m] > limit}
    assert not big, f"modules of {layer} over {limit} lines: " + ", ".join(f"{m} ({n})" for m, n in big.items())


# --------------------------------------------------------------------------- the engine


def test_the_engine_has_no_import_cycle_of_its_own(package: Package) -> None:
    """Among the engine's modules, no import cycle of any kind: shared types sit at its bottom (view, result, reads)."""
    engine = {m: {t for t in targets if in_layer(t, ("policylint.engine",))}
              for m, targets in package.edges().items() if in_layer(m, ("policylint.engine",))}
    cycles = [sorted(c) for c in strongly_connected(engine) if len(c) > 1]
    assert not cycles, f"import cycles inside the engine: {cycles}"


def test_measurement_never_imports_the_engine(package: Package) -> None:
    """Measuring hands plain data up (facts, ``Needed`` from the model); it never reaches into the engine."""
    bad = [imp for imp in package.imports
           if in_layer(imp.source, ("policylint.measure",)) and in_layer(imp.target, ("policylint.engine",))]
    assert not bad, f"measure imports the engine:\n{_listing(bad)}"


#: engine modules allowed over 500 lines (none: the repository index split into storage and use)
LONG_ENGINE_MODULES: set[str] = set()


def test_engine_modules_are_small(package: Package) -> None:
    big = {m for m, n in package.lines.items() if in_layer(m, ("policylint.engine",)) and n > 500}
    assert big <= LONG_ENGINE_MODULES, f"engine modules over 500 lines: {sorted(big - LONG_ENGINE_MODULES)}"
    assert LONG_ENGINE_MODULES <= big, f"no longer over 500 lines, drop from LONG_ENGINE_MODULES: {sorted(LONG_ENGINE_MODULES - big)}"


# --------------------------------------------------------------------------- the graph reader itself


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_graph_resolves_relative_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    root = _write(tmp_path / "pkg", {
        "__init__.py": "from . import a\n",
        "a.py": "from .sub import b\nimport os\n",
        "sub/__init__.py": "",
        "sub/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\n"
                    "def f():\n    from .. import c\n    from . import d\n",
        "sub/d.py": "from ..c import y\n",
        "c.py": "",
    })
    package = read_package(root)
    got = {(i.source, i.target, i.kind) for i in package.imports}
    assert got == {
        ("pkg", "pkg.a", "module"),
        ("pkg.a", "pkg.sub.b", "module"),
        ("pkg.a", "os", "module"),
        ("pkg.sub.b", "typing", "module"),
        ("pkg.sub.b", "pkg.a", "type-checking"),
        ("pkg.sub.b", "pkg.c", "function"),
        ("pkg.sub.b", "pkg.sub.d", "function"),
        ("pkg.sub.d", "pkg.c", "module"),
    }
    assert package.cycles() == [["pkg.a", "pkg.sub.b"]]
    assert package.cycles(["module"]) == []
    assert package.lines["pkg.sub.b"] == 6


#: The top of the house, highest first: the command line, then the reports it writes.
#: A module may import a top layer only from that layer or one above it - the
#: engine never reaches up into a command or a report (it hands results up instead).
TOP: dict[str, tuple[str, ...]] = {
    "cli": ("policylint.cli", "policylint.__main__", "policylint.serve", "policylint.commands"),
    "report": ("policylint.report",),
}


@pytest.mark.parametrize("layer", list(TOP))
def test_nothing_below_imports_the_top(package: Package, layer: str) -> None:
    """Commands and reports are imported only from above: no upward import into them."""
    above = [name for name in TOP][: list(TOP).index(layer) + 1]
    allowed = tuple(m for name in above for m in TOP[name])
    bad = [imp for imp in package.imports if in_layer(imp.target, TOP[layer]) and not in_layer(imp.source, allowed)]
    assert not bad, f"only {', '.join(allowed)} may import {layer}; these import it from below:\n{_listing(bad)}"


# --------------------------------------------------------------------------- the caches


#: What each cache module may import of policylint, module by module (an exact list, not
#: prefixes). The store and the trace digests are the ``cache`` package; each step's own
#: cache lives in that step's package (``*_cache`` modules), below the code of the step
#: that uses it, and takes the types it stores from modules below that step. ``cache.store`` (folder, seals, entry format) imports nothing
#: of the pipeline; the document cache nothing above the loader's plain data.
CACHE_IMPORTS: dict[str, tuple[str, ...]] = {
    "policylint.cache": (),
    "policylint.cache.exact": (),
    # cache work forked beside the run: the work is handed to it, nothing of the pipeline imported
    "policylint.cache.beside": (),
    "policylint.cache.store": ("policylint", "policylint.errors", "policylint.safeio", "policylint.writer"),
    # large entries a resident server keeps decoded for the runs it forks
    "policylint.cache.decoded": ("policylint.cache.store",),
    "policylint.model.load.document_cache": (
        "policylint.cache.store", "policylint.model.load.limits", "policylint.model.load.positions", "policylint.resources",
    ),
    "policylint.model.load.document_pack_cache": (
        "policylint.cache", "policylint.cache.store", "policylint.cache.decoded", "policylint.model.load.document_cache",
        "policylint.model.load.documents",
        "policylint.model.load.limits",
        "policylint.safeio",  # a file's stat identity as the run first saw it (stat_once)
    ),
    "policylint.model.config_cache": ("policylint.cache.store", "policylint.model.load.document_cache"),
    "policylint.engine.rule_cache": (
        "policylint.cache.store", "policylint.catalogue", "policylint.engine.rule", "policylint.errors", "policylint.finding",
        "policylint.model.load.limits", "policylint.safeio",
    ),
    # readers.kept: the bytes hashed for a trace's key are kept for the reader that parses them
    "policylint.cache.digests": ("policylint.cache.store", "policylint.readers.limits", "policylint.readers.kept"),
    "policylint.measure.cache_encoding": (
        "policylint.cache.store", "policylint.bands", "policylint.measure.facts", "policylint.measure.pooled",
        "policylint.readers.series",
    ),
    "policylint.measure.measurement_cache": (
        "policylint.cache.store", "policylint.cache.digests", "policylint.measure.cache_encoding", "policylint.measure.facts",
        "policylint.model", "policylint.readers.limits",
    ),
    "policylint.measure.pooled_cache": ("policylint.cache.store", "policylint.measure.pooled"),
}


def test_each_cache_imports_only_what_lies_below_the_step_it_serves(package: Package) -> None:
    # the store's package, and every module of a step named for the cache it keeps
    modules = {m for m in package.files if in_layer(m, ("policylint.cache",)) or "cache" in m.rsplit(".", 1)[-1]}
    assert modules == set(CACHE_IMPORTS), (
        "a cache module was added, renamed or removed: list what it may import in CACHE_IMPORTS:"
        f" {sorted(modules ^ set(CACHE_IMPORTS))}"
    )
    bad = [
        imp
        for imp in package.imports
        if imp.source in CACHE_IMPORTS and imp.target in package.files and imp.target not in CACHE_IMPORTS[imp.source]
    ]
    assert not bad, f"cache modules importing beyond CACHE_IMPORTS:\n{_listing(bad)}"


def test_the_loader_reaches_only_the_document_cache(package: Package) -> None:
    """The loader sits above the document cache and its store, and below every other cache."""
    allowed = ("policylint.model.load.document_cache", "policylint.cache.store", "policylint.cache.decoded")
    bad = [
        imp
        for imp in package.imports
        if in_layer(imp.source, ("policylint.model.load",)) and in_layer(imp.target, ("policylint.cache",))
        and imp.target not in allowed
    ]
    assert not bad, f"the loader imports a cache above it:\n{_listing(bad)}"


def test_no_import_cycle_anywhere(package: Package) -> None:
    """The whole package's import graph - module-level, in-function and type-only imports alike - has no cycle.

    Every module therefore has a place in one order, lowest first, and a change to a
    module can only break what lies above it. A new cycle is named with its shortest path.
    """
    cycles = package.cycles()
    described = ["\n".join(imp.describe() for imp in package.shortest_cycle(min(c))) for c in cycles]
    assert cycles == [], "import cycles:\n" + "\n\n".join(described)
