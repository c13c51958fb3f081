"""Open questions: every ambiguity witness really tells the two allowed agents apart."""

from __future__ import annotations

import pytest

from model.questions import QUESTIONS, Question
from simulations.engines.trace import Trace, replay
from simulations.outputs.report import observations


def test_questions_are_digest_ids_each_once() -> None:
    ids = [q.qid for q in QUESTIONS]
    assert len(ids) == len(set(ids))
    assert sorted(int(q[1:]) for q in ids) == list(range(1, 25))  # every question of §7
    assert all(q.witness is not None or q.choice for q in QUESTIONS)
    assert sum(q.witness is not None for q in QUESTIONS) >= 8


@pytest.mark.parametrize("q", [q for q in QUESTIONS if q.witness], ids=lambda q: q.qid)
def test_witness_shows_two_observably_different_agents(q: Question) -> None:
    w = q.witness
    assert w is not None
    a, b = observations(w, w.a), observations(w, w.b)
    assert len(a) == len(b) == len(w.requests)
    assert a != b, f"{q.qid}: both agents look the same on this transcript"
    # every step is actually sent (the transcript is one a client would send)
    assert all(s.step.sent for s in replay(Trace(w.profile, w.requests), w.a))
