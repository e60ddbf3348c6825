"""Help text of configuration fields, one convention for the whole package: the docstring written under each field
of a dataclass (``TrainConfig``, ``Settings``, ``MRTPOConfig``). :func:`field_docs` reads them (they are not kept
at run time); :func:`help_from_docstrings` also puts them where TRL's argument parser looks (``metadata["help"]``).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types


def field_docs(cls: type) -> dict[str, str]:
    """Field name -> the docstring written under it in the class body (attribute docstrings are not kept at run
    time, so they are read from the source), on one line."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, after in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def help_from_docstrings(cls: type) -> type:
    """Class decorator, above ``@dataclass``: each field of ``cls`` with a docstring gets it as ``metadata["help"]``
    (what ``transformers.HfArgumentParser`` shows), so the docstring stays the one place the help is written."""
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        if f.name in docs:
            f.metadata = types.MappingProxyType({**f.metadata, "help": docs[f.name]})
    return cls
