"""Errors a user can act on.

Every error raised on purpose by ``core`` is a :class:`DCError`. Its ``str()`` is one sentence that the
CLI prints after the file name and the GUI shows in a dialog; no traceback is ever needed to understand
it.
"""

from __future__ import annotations

from pathlib import Path


class DCError(Exception):
    """Base class: one clear sentence, optionally naming the file it is about."""

    def __init__(self, message: str, *, path: str | Path | None = None):
        super().__init__(message)
        self.message = message
        self.path = None if path is None else Path(path)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path is not None else self.message


class FormatError(DCError):
    """A file is malformed, too large, or of a format version this program does not read."""


class VerificationError(DCError):
    """A signature, MAC, tag or binding field does not check out: the file is refused."""


class UnconfirmedSender(VerificationError):
    """A file's sender (from its clear header) is not among the keys the reader confirmed."""

    def __init__(self, card, what: str = "file"):
        super().__init__(f"this {what} was sent by {card.name!r} ({card.fingerprint}), whom this project has not "
                         "confirmed; compare that fingerprint with the sender (by phone or on paper), then confirm "
                         "it (kit roster, --confirm FINGERPRINT or CARD.dcpub, or the Bundles page)")
        self.card, self.what = card, what

    def __reduce__(self):  # copy.copy (used to attach a path) must not re-run __init__ with the message
        return (UnconfirmedSender, (self.card, self.what), dict(self.__dict__))


class AuditLogRefused(VerificationError):
    """A workspace's audit log (or what binds it to its workspace) does not verify, so nothing is appended to it;
    ``workspace`` is its folder (the way on is ``dcstudio audit new``; the app offers it as a button)."""

    def __init__(self, message: str, *, path: str | Path | None = None, workspace: str | Path | None = None,
                 problem: str | None = None):
        super().__init__(message, path=path)
        self.workspace = None if workspace is None else Path(workspace)
        self.problem = problem or message  # the refusal without the command line that follows it

    def __reduce__(self):  # copy.copy must not re-run __init__ without the workspace
        return (AuditLogRefused, (self.message,), dict(self.__dict__))


class DuplicateError(DCError):
    """The same bundle (by id) was already imported."""


class DataError(DCError):
    """Local data (a CSV) does not fit the project's schema."""


class ConfigError(DCError):
    """Settings or arguments that cannot work together."""


class Cancelled(DCError):
    """A long job was cancelled by the user; nothing was written."""

    def __init__(self, message: str = "cancelled by the user"):
        super().__init__(message)


def project_label(project_id: str, names: dict[str, str] | None = None) -> str:
    """A project as people know it: "project 'Name' (id 3f2a9c1b…)", or "another project (id …)"."""
    name = (names or {}).get(project_id)
    short = f"id {project_id[:8]}…" if len(project_id) > 8 else f"id {project_id}"
    return f"project {name!r} ({short})" if name else f"another project ({short})"
