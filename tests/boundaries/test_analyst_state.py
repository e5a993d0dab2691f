"""The analyst's open project as a plain object: usable and testable without Qt."""

from core.analyst_state import EVENTS, AnalystState


def test_state_imports_no_qt_and_emits_one_event_per_change():
    state, heard = AnalystState(), []
    for event in EVENTS:
        state.connect(event, lambda e=event: heard.append(e))
    state.set_threshold(0.5)
    state.set_threshold(0.5)  # unchanged: no event
    assert heard == ["threshold"] and state.t_choice == 0.5
    state.set_run(None)
    state.set_session(None, None, None)
    assert heard == ["threshold", "result", "session", "bundles", "result"]
    assert state.kit is None and state.classes == [] and state.task == ""

