"""A griffe extension that turns the reStructuredText of mpdp's docstrings into what mkdocstrings renders.

mpdp's docstrings are numpy-style and cross-reference with Sphinx roles (``:func:`~mpdp.x.f```). Markdown has
no roles, so this extension rewrites each one, when the docs are built, into an autorefs cross-reference: a
link to the object's entry in the API reference. A target is resolved as Python would from the docstring's
scope (``:func:`load_csv``` in a module that imports it), so short names work. A target inside ``mpdp`` that
does not resolve is a broken reference and fails the strict build (the docstring names something that does
not exist); private objects (not in the reference) and targets outside ``mpdp`` (``numpy.ndarray``) render as
code. It also turns the ``::`` that
introduces a literal block into ``:``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|exc|obj|const):`(?P<body>[^`]+)`")
EXPLICIT = re.compile(r"(?P<title>.+?)\s*<(?P<target>[^>]+)>")
LITERAL = re.compile(r"(?<=\S)::(?=\n\n)")
_NO_LINK = {"mpdp"}  # the root package has no page of its own


class RstToMarkdown(griffe.Extension):
    """Rewrite roles and literal-block markers in every docstring of the package being loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg, pkg)

    def _walk(self, obj: griffe.Object, root: griffe.Module) -> None:
        if obj.docstring is not None:
            obj.docstring.value = self._convert(obj.docstring.value, obj, root)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, root)  # type: ignore[arg-type]

    def _convert(self, text: str, scope: griffe.Object, root: griffe.Module) -> str:
        def replace(match: re.Match[str]) -> str:
            return self._reference(match["body"], scope, root)

        return LITERAL.sub(":", ROLE.sub(replace, text))

    def _reference(self, body: str, scope: griffe.Object, root: griffe.Module) -> str:
        explicit = EXPLICIT.fullmatch(body)
        short = body.startswith("~")
        target = (explicit["target"] if explicit else body).lstrip("~").removesuffix("()")
        title = explicit["title"] if explicit else (target.rsplit(".", 1)[-1] if short else target)
        path = self._resolve(target, scope, root)
        if path is None or path in _NO_LINK or any(part.startswith("_") for part in path.split(".")):
            return f"`{title}`"
        return f"[`{title}`][{path}]"

    @staticmethod
    def _resolve(target: str, scope: griffe.Object, root: griffe.Module) -> str | None:
        """The canonical path of ``target`` seen from ``scope``; None for a name outside the package.

        A dotted path inside the package that names nothing is returned as written, so the build reports it.
        """
        head, _, rest = target.partition(".")
        if head == root.name:
            path = target
        else:
            try:
                base = scope.resolve(head)
            except griffe.NameResolutionError:
                return None
            if base != root.name and not base.startswith(f"{root.name}."):
                return None
            path = f"{base}.{rest}" if rest else base
        obj: griffe.Object | griffe.Alias = root
        for name in path.split(".")[1:]:
            try:
                obj = obj.members[name]
                if obj.is_alias:
                    obj = obj.final_target  # type: ignore[union-attr]
            except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
                return path
        return obj.canonical_path
