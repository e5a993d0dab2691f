"""The participant's side of the desktop app: the export wizard and the results window."""

from .wizard import ParticipantWizard, ResultsWindow

__all__ = ["ParticipantWizard", "ResultsWindow"]
