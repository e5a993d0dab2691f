"""A page built from section widgets keeps its test hooks: each hook is a property that reads (and, for
the objects a test sets, writes) the attribute of the section that holds it."""

from __future__ import annotations


def forward(section: str, name: str, settable: bool = False) -> property:
    """The page's ``name``: its section ``section``'s attribute of the same name."""

    def get(page):
        return getattr(getattr(page, section), name)

    def put(page, value) -> None:
        setattr(getattr(page, section), name, value)

    return property(get, put if settable else None, doc=f"The {section}'s ``{name}``.")
