"""The generator's data about the official schemas (``mcpspec.codegen.schema``): which
upstream schema file each revision is built from (the pins), and the known defects of
those files with the patch for each (:mod:`.errata`). No schema is stored here: the
files are read from a local copy or downloaded, and checked against their pins.

Every revision is pinned by the specification repository's path, the commit it was taken
at, and the sha256 of the file's bytes. The generator refuses a file whose hash differs:
upstream has edited released schemas after their release, and a silent change of input
would silently change the generated bindings.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errata import ERRATA, Erratum

__all__ = [
    "ERRATA",
    "EXTENSION_PINS",
    "PINS",
    "UPSTREAM_REPOSITORY",
    "Erratum",
    "ExtensionPin",
    "Pin",
    "pin_for",
]

UPSTREAM_REPOSITORY = "modelcontextprotocol/modelcontextprotocol"


def raw_url(repository: str, commit: str, path: str) -> str:
    """The raw file at ``path`` of ``repository`` (owner/name) at ``commit``."""
    return f"https://raw.githubusercontent.com/{repository}/{commit}/{path}"


@dataclass(frozen=True)
class Pin:
    """One revision's schema file: where it lives upstream and what its bytes hash to."""

    revision: str
    upstream_path: str
    commit: str
    sha256: str

    @property
    def download_url(self) -> str:
        """The raw file at the pinned commit, for machines without a local copy."""
        return raw_url(UPSTREAM_REPOSITORY, self.commit, self.upstream_path)


_COMMIT = "b0f60ba5409db7a6582440a7b473cc0398890f15"

#: Oldest first; the last one is the latest revision.
PINS: tuple[Pin, ...] = (
    Pin(
        "2024-11-05",
        "schema/2024-11-05/schema.json",
        _COMMIT,
        "61cea2392d4f284092d09bc84b9ac488c0d5618ac2b38a56942fc5b99fd960ce",
    ),
    Pin(
        "2025-03-26",
        "schema/2025-03-26/schema.json",
        _COMMIT,
        "e720669548c8100a4282c49e580efd6ddf7f28899ea786fc8db251dbdb356131",
    ),
    Pin(
        "2025-06-18",
        "schema/2025-06-18/schema.json",
        _COMMIT,
        "af845e7e5b9d27107d1690f0936022546177a1403e63ffb11470135b296a2e01",
    ),
    Pin(
        "2025-11-25",
        "schema/2025-11-25/schema.json",
        _COMMIT,
        "268a5f82ba70fd7e4b6dc4aa1e64f116f74b4d0edcb69dc046829c79dd4e97e7",
    ),
    Pin(
        "2026-07-28",
        "schema/2026-07-28/schema.json",
        _COMMIT,
        "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203",
    ),
)


def pin_for(revision: str) -> Pin:
    """The pin of ``revision``; ``KeyError`` names the pinned revisions when there is none."""
    for pin in PINS:
        if pin.revision == revision:
            return pin
    known = ", ".join(p.revision for p in PINS)
    raise KeyError(
        f"no pinned schema for revision {revision!r} (pinned: {known}); "
        "pass --schema for an unpinned one"
    )


@dataclass(frozen=True)
class ExtensionPin:
    """One protocol extension's schema file, pinned like a revision's. Its module is
    generated beside the revisions but nothing imports it unless the extension is used:
    an extension is opt-in."""

    #: The extension identifier declared under ``capabilities.extensions``.
    extension: str
    #: The protocol revision the extension is defined for.
    revision: str
    #: The module's file name in the generated package, without ``.py``.
    module: str
    #: The folder of the local copy, under ``<schema dir>/extensions/``.
    folder: str
    repository: str
    upstream_path: str
    commit: str
    sha256: str

    @property
    def download_url(self) -> str:
        """The raw file at the pinned commit, for machines without a local copy."""
        return raw_url(self.repository, self.commit, self.upstream_path)


#: The extensions whose modules are generated. The tasks extension (SEP-2663) is a draft.
EXTENSION_PINS: tuple[ExtensionPin, ...] = (
    ExtensionPin(
        "io.modelcontextprotocol/tasks",
        "2026-07-28",
        "ext_tasks",
        "io.modelcontextprotocol-tasks",
        "modelcontextprotocol/ext-tasks",
        "schema/draft/schema.json",
        "e4345978be1f602f1fc48d89051e8559dd5302a6",
        "10933a5003097bbccb03d964e6a5f7a2819cc4d7a1d07e27c6765cbf5da35c5c",
    ),
)
