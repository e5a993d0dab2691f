"""core/heap.py (used by apply's streaming, core/participant.py): freed memory kept for reuse within a site's pass, the
process's settings given back after it."""

from __future__ import annotations

import numpy as np
from numpy._core.multiarray import _set_madvise_hugepage

from core import heap


def huge_pages_now() -> bool:
    before = _set_madvise_hugepage(True)
    _set_madvise_hugepage(before)
    return bool(before)


def test_numpy_huge_pages_are_off_within_and_as_before_after_even_when_nested(monkeypatch):
    settings = []
    monkeypatch.setattr(heap, "_calls", [(lambda p, v: settings.append((p, v)) or 1, lambda pad: settings.append(
        ("trim", pad)) or 1)])
    before = huge_pages_now()
    with heap.reuse_freed_memory():
        assert huge_pages_now() is False
        with heap.reuse_freed_memory():
            assert huge_pages_now() is False
        assert huge_pages_now() is False
        assert settings == list(heap.KEPT.items())  # set once, by the outermost use
        a = np.ones(1 << 20)
        del a
    assert huge_pages_now() is before
    assert settings == [*heap.KEPT.items(), *heap.AFTER.items(), ("trim", 0)]


def test_the_settings_are_given_back_when_the_pass_fails(monkeypatch):
    settings = []
    monkeypatch.setattr(heap, "_calls", [(lambda p, v: settings.append((p, v)) or 1, lambda pad: 1)])
    before = huge_pages_now()
    try:
        with heap.reuse_freed_memory():
            raise KeyError("x")
    except KeyError:
        pass
    assert huge_pages_now() is before
    assert settings[-len(heap.AFTER):] == list(heap.AFTER.items())


def test_without_glibc_it_only_switches_numpy(monkeypatch):
    monkeypatch.setattr(heap, "_calls", [None])
    with heap.reuse_freed_memory():
        assert huge_pages_now() is False


def test_without_huge_pages_leaves_malloc_alone_and_nests_with_reuse(monkeypatch):
    settings = []
    monkeypatch.setattr(heap, "_calls", [(lambda p, v: settings.append((p, v)) or 1, lambda pad: 1)])
    _set_madvise_hugepage(True)
    with heap.without_huge_pages():
        assert huge_pages_now() is False
        with heap.reuse_freed_memory():
            assert huge_pages_now() is False
        assert huge_pages_now() is False  # the inner use's end does not switch them back on
        with heap.without_huge_pages():
            assert huge_pages_now() is False
        assert huge_pages_now() is False
    assert huge_pages_now() is True
    assert settings == [*heap.KEPT.items(), *heap.AFTER.items()]  # only the reuse touched malloc


def test_the_export_command_runs_without_huge_pages(monkeypatch):
    from core import cli

    seen = []
    monkeypatch.setattr(cli, "_participant_round", lambda args: seen.append(huge_pages_now()) or (_ for _ in ()).throw(
        KeyError("stop")))
    _set_madvise_hugepage(True)
    try:
        cli.cmd_participant_export(None)
    except KeyError:
        pass
    assert seen == [False] and huge_pages_now() is True
