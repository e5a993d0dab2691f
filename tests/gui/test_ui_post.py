"""Worker threads hand their signals to the UI thread through one lasting bridge (gui/ui_post.py): a job whose window
was closed stops at its next step, and nothing is delivered to a deleted object."""

from __future__ import annotations

import threading

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject

from core.api import Cancelled
from gui.jobs import Job
from gui.ui_post import post


def test_a_jobs_signals_arrive_on_the_ui_thread(qtbot):
    seen = []
    job = Job(lambda control: (control.step(0.5, "half"), 42)[1], "t")
    job.progress.connect(lambda f, t: seen.append(("progress", threading.current_thread())))
    job.succeeded.connect(lambda r: seen.append((r, threading.current_thread())))
    with qtbot.waitSignal(job.ended, timeout=60_000):
        job.start()
    assert job.wait(60)
    assert [s[0] for s in seen] == ["progress", 42]
    assert all(s[1] is threading.main_thread() for s in seen)


def test_a_job_whose_object_is_deleted_stops_at_its_next_step(qtbot):
    reported, stopped = threading.Event(), []

    def work(control):
        control.step(0.1, "first")
        reported.set()
        try:
            while True:
                control.step(0.2, "again")
        except Cancelled:
            stopped.append(True)
            raise

    job = Job(work, "t")
    ended = []
    job.ended.connect(lambda: ended.append(True))
    job.start()
    assert reported.wait(60)
    shiboken6.delete(job)          # its window closed while the worker runs
    assert job.wait(60) and stopped == [True]
    QCoreApplication.processEvents()   # what the worker posted meanwhile reaches nobody, and nothing crashes
    assert ended == []


def test_nothing_is_delivered_to_a_deleted_target(qtbot):
    calls = []
    target = QObject()
    done = threading.Event()

    def worker():
        post(target, lambda t: calls.append(t))
        done.set()

    shiboken6.delete(target)
    threading.Thread(target=worker).start()
    assert done.wait(60)
    QCoreApplication.processEvents()
    assert calls == []
    live = QObject()
    post(live, lambda t: calls.append(t))
    QCoreApplication.processEvents()
    assert calls == [live]
