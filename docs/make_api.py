"""Write docs/api.md: every public name of the library, its signature and the first paragraph of its docstring.

    python docs/make_api.py           # rewrite docs/api.md
    python docs/make_api.py --check   # exit status 1 if docs/api.md is not what this script writes now

The public names are each module's ``__all__`` in :data:`MODULES`; a class lists its constructor and the public methods
it defines itself (not those inherited from ``torch.nn.Module``), each with its own docstring (an overridden ``forward``
without one shows none, not ``torch.nn.Module.forward``'s). ``tests/test_api_doc.py`` runs ``--check``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path

MODULES = ["complexorder", "complexorder.nn", "complexorder.nn.functional", "complexorder.models",
           # the Python API behind the commands (docs/configs.md, "From Python")
           "complexorder.experiments.classification", "complexorder.experiments.report",
           "complexorder.experiments.ablation", "complexorder.experiments.inspection",
           "complexorder.experiments.translation", "complexorder.experiments.language_model"]
OUT = Path(__file__).resolve().parent / "api.md"
HEADER = """# API reference

The public names (each module's `__all__`) of the library's modules — the embeddings, the layers, the models and the
Python API behind the commands (the experiment runners) — each with its signature and the first paragraph of its own
docstring (`help(name)` shows the whole docstring: arguments, shapes, examples). Written by `python docs/make_api.py`
from the code; `tests/test_api_doc.py` fails when this file is out of date.
"""


def first_paragraph(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    paragraph = doc.strip().split("\n\n")[0]
    return re.sub(r"\s*\n\s*", " ", paragraph).strip()


def signature(obj: object) -> str:
    """``(a: int, b: Tensor | None = None) -> Tensor``, without ``self``; annotations as written in the code."""
    try:
        sig = inspect.signature(obj, eval_str=True)  # type: ignore[arg-type]
    except (TypeError, ValueError, NameError):
        try:
            sig = inspect.signature(obj)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return "(...)"
    sig = sig.replace(parameters=[p for p in sig.parameters.values() if p.name != "self"])
    if inspect.isclass(obj):
        sig = sig.replace(return_annotation=inspect.Signature.empty)
    text = str(sig)
    for long, short in (("torch.Tensor", "Tensor"), ("torch.nn.modules.module.Module", "nn.Module"),
                        ("torch.nn.parameter.Parameter", "nn.Parameter"), ("collections.abc.", "")):
        text = text.replace(long, short)
    text = re.sub(r"<class '([\w.]+)'>", r"\1", text)
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # default values that are objects


def own_methods(cls: type) -> list[tuple[str, object]]:
    methods = []
    for name, member in vars(cls).items():
        if name.startswith("_") or name == "extra_repr" or not (inspect.isfunction(member) or isinstance(member, (staticmethod, classmethod))):
            continue
        methods.append((name, getattr(cls, name)))
    return methods


def render() -> str:
    lines = [HEADER]
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        lines.append(f"## `{module_name}`\n")
        summary = first_paragraph(module)
        if summary:
            lines.append(summary + "\n")
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or name.startswith("__"):
                continue
            if inspect.isclass(obj):
                lines.append(f"### `{name}{signature(obj)}`\n")
                lines.append((first_paragraph(obj) or "(no docstring)") + "\n")
                for method_name, method in own_methods(obj):
                    text = first_paragraph(method) if getattr(method, "__doc__", None) else ""  # not torch's
                    lines.append(f"- `{method_name}{signature(method)}`" + (f": {text}" if text else ""))
                if own_methods(obj):
                    lines.append("")
            elif callable(obj):
                lines.append(f"### `{name}{signature(obj)}`\n")
                lines.append((first_paragraph(obj) or "(no docstring)") + "\n")
            else:  # a constant: its value, when short
                value = repr(obj)
                lines.append(f"### `{name}`\n")
                lines.append((f"`{value}`" if len(value) <= 200 else f"a {type(obj).__name__} of {len(obj)} entries")
                             + "\n")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that docs/api.md is up to date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not OUT.is_file() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date: run python docs/make_api.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
