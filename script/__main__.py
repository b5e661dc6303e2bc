"""``python -m script inspect FILE``: what a saved model holds, without running it.

Prints the module, its methods with their signatures, the classes they use, a table of the saved
arrays (name, shape, dtype, bytes) and each method's graph. The file is checked as ``load``
checks it (format, checksums, array headers, graphs); a file that fails is reported with the
reason and exit status 1.

``python -m script export FILE --onnx OUT.onnx --input 5,2,4 [--input ...]``: the saved model's
``forward`` exported to ONNX (``script.export_onnx``), traced at example arrays of the given
shapes (``SHAPE[:DTYPE]``, float32 by default; arguments not given are left at their defaults).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from script.artifact.archive import ARRAY_ROLES, Archive, read_archive
from script.artifact.onnx_export import export_onnx
from script.artifact.serialize import load
from script.errors import LoadError, ScriptError


def describe(archive: Archive, path: str) -> str:
    """The inspection report of a loaded archive."""
    m = archive.manifest
    mode = "frozen" if m["frozen"] else ("training mode" if m["training"] else "eval mode")
    lines = [f"{path}: rnnscript model (format {m['format_version']}, written by rnnscript "
             f"{m['package_version']})",
             f"module {m['module']} ({mode})", "", "methods:"]
    for name, entry in m["methods"].items():
        lines.append(f"  {_signature(name, entry)}")
        if entry["inputs"]:
            lines.append(f"    reads {len(entry['inputs'])} saved array(s) after its arguments")
    if m["classes"]:
        lines += ["", "classes:"]
        for name, entry in m["classes"].items():
            fields = ", ".join(f"{f}: {t}" for f, t in entry["fields"])
            kind = "NamedTuple" if entry["named_tuple"] else "class"
            lines.append(f"  {kind} {name}({fields})")
    lines += ["", *_array_table(archive)]
    for name, entry in m["methods"].items():
        lines += ["", f"graph of {name}:", archive.text(entry["graph"]).rstrip("\n")]
    return "\n".join(lines) + "\n"


def _signature(name: str, entry: dict[str, Any]) -> str:
    args = []
    for arg, t in zip(entry["arg_names"], entry["arg_types"]):
        default = entry["defaults"].get(arg, _NO_DEFAULT)
        args.append(f"{arg}: {t}" + ("" if default is _NO_DEFAULT else f" = {default!r}"))
    return f"{name}({', '.join(args)}) -> {entry['return_type']}"


_NO_DEFAULT = object()


def _array_table(archive: Archive) -> list[str]:
    rows = []
    for role in ARRAY_ROLES:
        for name, entry in archive.manifest[role].items():
            nbytes = int(np.prod(entry["shape"], dtype=np.int64)) * \
                np.dtype(entry["dtype"]).itemsize
            shape = "(" + ", ".join(map(str, entry["shape"])) + \
                ("," if len(entry["shape"]) == 1 else "") + ")"
            rows.append((role[:-1], name, shape, entry["dtype"], nbytes))
    if not rows:
        return ["arrays: none"]
    width = max(len(r[1]) for r in rows)
    out = [f"arrays ({len(rows)}, {sum(r[4] for r in rows)} bytes):",
           f"  {'kind':<9} {'name':<{width}}  {'shape':<14} {'dtype':<8} {'bytes':>10}"]
    out += [f"  {kind:<9} {name:<{width}}  {shape:<14} {dtype:<8} {n:>10}"
            for kind, name, shape, dtype, n in rows]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m script",
                                     description="Tools for saved rnnscript models.")
    commands = parser.add_subparsers(dest="command", required=True)
    inspect = commands.add_parser("inspect", help="print a saved model's methods, signatures, "
                                  "graphs and arrays")
    inspect.add_argument("file", help="a file written by script.save")
    export = commands.add_parser("export", help="export a saved model's forward to ONNX")
    export.add_argument("file", help="a file written by script.save")
    export.add_argument("--onnx", required=True, metavar="OUT", help="the ONNX file to write")
    export.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]",
                        help="an example array argument, in order (e.g. 5,2,4 or 7,3:float64)")
    export.add_argument("--opset", type=int, default=None, help="the ONNX opset (default 18)")
    export.add_argument("--static", action="store_true",
                        help="fix every shape at the example's (default: all axes of an input "
                             "but its last are free)")
    args = parser.parse_args(argv)
    if args.command == "export":
        return _export(args)
    try:
        archive = read_archive(args.file)
        load(args.file)  # the same checks as loading: graphs parse, verify and match
    except LoadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(describe(archive, args.file))
    return 0


def _export(args: argparse.Namespace) -> int:
    try:
        model = load(args.file)
        example = tuple(_example_array(spec) for spec in args.input)
        export_onnx(model, example, args.onnx, opset=args.opset, dynamic_axes=not args.static)
    except (LoadError, ScriptError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.onnx}")
    return 0


def _example_array(spec: str) -> np.ndarray:
    """An example array from ``SHAPE[:DTYPE]`` (``5,2,4`` or ``5,2,4:float64``)."""
    shape, _, dtype = spec.partition(":")
    try:
        dims = tuple(int(d) for d in shape.split(",") if d.strip())
        return np.zeros(dims, dtype=np.dtype(dtype or "float32"))
    except (TypeError, ValueError):
        raise ValueError(f"--input {spec!r}: expected SHAPE[:DTYPE] such as 5,2,4:float32"
                         ) from None


if __name__ == "__main__":
    sys.exit(main())
