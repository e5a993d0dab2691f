"""HFLDD's one-shot distillation: the seam (:mod:`.method`) and the distillation itself (:mod:`.kip`)."""

from .method import HFLDD

__all__ = ["HFLDD"]
