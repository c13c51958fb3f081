"""Where the prompt travels (the field or ``_meta.systemPrompt``) and restore by re-send.

Issue 16: the client's ``puts_prompt`` against the agent's ``reads_prompt`` (the agent sees the
prompt iff it reads where the client writes), and ``restore = "resent"`` (load, resume and fork
take the prompt from the request, the default when absent), which widens a draft wire to carry
the re-send in ``_meta``. Pins run on one scope of the small bound (restarts same) to stay cheap.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from model.profiles import PROFILES, Profile, ProfileError
from model.revisions import REVISIONS
from model.types import Caps, Request
from simulations.api import check
from simulations.engines.bounds import BOUNDS, Bound
from simulations.engines.domain import DEFAULT_DOMAIN, text
from simulations.engines.trace import Trace
from simulations.outputs.forms import write_counterexample
from simulations.wire.acp import meta_methods, transcript

# a question another such module or a notebook explored is answered from the run's share
pytestmark = pytest.mark.usefixtures("shared_explorations")

SAME = DEFAULT_DOMAIN.with_restarts("same")


def _scope(name: str) -> Bound:
    small = BOUNDS["small"]
    return replace(small, name=name, scopes=tuple(s for s in small.scopes if s.name == name))


@cache
def _violated(profile: Profile, scope: str) -> tuple[int, frozenset[str]]:
    r = check(profile=profile, bound=_scope(scope), domain=SAME)
    return r.budget["states"], frozenset(k for k, v in r.verdicts.items() if v == "violated")


# (revision, scope) → the ids the reference pairing breaks, and what a mismatch adds
LOST = {
    # P9 too: the client was told nothing, and believes the prompt it sent is the one in use
    ("rfd-final", "wire"): (set(), {"P1", "P9", "R7", "R9", "R11", "R21"}),
    ("v1-stable", "wire"): ({"T6"}, {"P1", "P9", "T9", "T12", "T13"}),
}


@pytest.mark.parametrize(("revision", "scope"), list(LOST))
@pytest.mark.parametrize("reads", ["field", "meta", "nowhere"])
@pytest.mark.parametrize("puts", ["field", "meta"])
def test_the_agent_sees_the_prompt_iff_it_reads_where_the_client_writes(
    revision: str, scope: str, reads: str, puts: str
) -> None:
    reference, lost = LOST[revision, scope]
    p = Profile("x", revision=revision, reads_prompt=reads, client_puts_prompt=puts)
    states, violated = _violated(p, scope)
    ref_states, ref_violated = _violated(Profile("x", revision=revision), scope)
    assert ref_violated == reference
    if reads == puts:  # field/field and meta/meta: the reference agent, to the table
        assert p.tables() == REVISIONS[revision].tables
        assert (states, violated) == (ref_states, ref_violated)
    else:  # a mismatch, or nowhere: accepted and ignored
        assert p.tables() != REVISIONS[revision].tables
        assert violated - ref_violated == lost and not ref_violated - violated


def test_a_meta_reading_agent_also_misses_a_re_sent_field_prompt_on_v1_stable() -> None:
    """On the envelope wire the re-sent prompt of load is unseen too: the session keeps what
    it was created with (the default here), where the reference agent applies ``b``."""
    reqs = (
        Request("connect"),
        Request("initialize"),
        Request("session_new", system_prompt=text("a"), mode="append"),
        Request("session_close", sid="s1"),
        Request("session_load", sid="s1", system_prompt=text("b"), mode="append"),
        Request("session_prompt", sid="s1"),
    )
    from simulations.engines.domain import PROFILES as CAPS
    from simulations.engines.trace import replay

    def slot(**knobs: str) -> Any:
        t = Profile("x", revision="v1-stable", **knobs).tables()
        return replay(Trace(CAPS[0], reqs), t)[-1].step.reply.slot

    assert slot() == slot(reads_prompt="meta", client_puts_prompt="meta") == ("BASE", "b")
    assert slot(reads_prompt="meta") == slot(client_puts_prompt="meta") == ("BASE",)
    assert slot(reads_prompt="nowhere", client_puts_prompt="meta") == ("BASE",)


def test_a_bare_prompt_in_meta_is_accepted_and_refused_only_where_nothing_is_read() -> None:
    """The clash rule refuses what has no effect under any client: a bare prompt for an agent
    that reads nowhere. Read in _meta, a client that writes there gets it replaced."""
    with pytest.raises(ProfileError, match='cannot be combined with bare_prompt = "replace"'):
        Profile("x", bare_prompt="replace", reads_prompt="nowhere")
    p = Profile("x", bare_prompt="replace", reads_prompt="meta", client_puts_prompt="meta")
    assert p.tables() == Profile("x", bare_prompt="replace").tables()
    unseen = Profile("x", bare_prompt="replace", reads_prompt="meta").tables()
    assert unseen != p.tables()


def test_shipped_meta_agents_read_meta_as_their_clients_write_it() -> None:
    for name in ("goose-9971", "claude-agent-acp-meta"):
        p = PROFILES[name]
        assert p.reads_prompt == p.client_puts_prompt == "meta", name
        assert "_meta" in p.source or "_meta" in p.summary


# ---- restore by re-send ------------------------------------------------------------------


def test_restore_resent_on_v1_stable_is_on_load_default_with_fork_inherits_false() -> None:
    """v1-stable's agent applies a re-sent prompt already; on an omitted one restore = resent
    is two knobs that exist: the edit gives their tables, and the profile points at them."""
    from model.knobs import EDITS  # the edit itself: what the refusal says it equals

    for revision in ("v1-stable", "v2-draft"):
        with pytest.raises(ProfileError, match='on_load = "default" with fork_inherits = false'):
            Profile("x", revision=revision, restore="resent")
        same = Profile("x", revision=revision, on_load="default", fork_inherits=False)
        assert EDITS["restore"](REVISIONS[revision].tables, "resent") == same.tables()


def test_restore_resent_widens_a_draft_wire_to_re_send_in_meta() -> None:
    load = Request("session_load", sid="s1", system_prompt=text("a"), mode="append")
    p = Profile("x", restore="resent")
    assert not REVISIONS["rfd-final"].admits(load) and p.admits()(load)
    assert not p.admits()(Request("session_load", sid="s1", mode="append"))  # a mode alone
    draft = Profile("x", revision="rfd-draft", restore="resent").admits()
    assert draft(Request("session_fork", sid="s1", system_prompt=text("a")))
    assert not draft(load)  # the string wire has no mode, in _meta or elsewhere
    assert Profile("x").admits() is REVISIONS["rfd-final"].admits


def test_restore_resent_refuses_knobs_it_leaves_without_effect() -> None:
    with pytest.raises(ProfileError, match=r"on_load.*cannot be combined with restore"):
        Profile("x", restore="resent", on_load="default")
    with pytest.raises(ProfileError, match=r"fork_inherits.*cannot be combined with restore"):
        Profile("x", restore="resent", fork_inherits=False)
    # the client's re-send policy is refused where nothing is re-sent, taken where it is
    with pytest.raises(ProfileError, match="client_resends"):
        Profile("x", client_resends="same")
    assert Profile("x", restore="resent", client_resends="same").tables()


# restore = "resent" on one scope (lifecycle: restarts, load and fork, adversarial clients
# that re-send another prompt): the ids broken beyond the revision's reference agent (on the
# small bound, rfd-final with resends = "any" breaks P1–P5, P7, P8, R16–R18: 26 s, not pinned)
RESENT_BREAKS = {
    ("rfd-final", "same"): {"P8", "R16", "R17", "R18"},
    ("rfd-draft", "any"): {"P2", "P3", "P4", "P7", "R18"},
}


@pytest.mark.parametrize(("revision", "resends"), list(RESENT_BREAKS))
def test_restore_resent_breaks_exactly(revision: str, resends: str) -> None:
    p = Profile("x", revision=revision, restore="resent", client_resends=resends)
    _, violated = _violated(p, "lifecycle")
    _, reference = _violated(Profile("x", revision=revision), "lifecycle")
    assert violated - reference == RESENT_BREAKS[revision, resends]


def test_the_transcript_shows_the_re_send_in_meta() -> None:
    p = Profile("x", restore="resent")
    assert meta_methods(p) == ("session_load", "session_resume", "session_fork")
    assert meta_methods(Profile("x", client_puts_prompt="meta")) == ("session_new",)
    assert meta_methods(Profile("x")) == ()
    from simulations.engines.domain import PROFILES as CAPS

    reqs = (
        Request("connect"),
        Request("initialize"),
        Request("session_new", system_prompt=text("a"), mode="append"),
        Request("session_close", sid="s1"),
        Request("session_load", sid="s1", system_prompt=text("a"), mode="append"),
    )
    trace = Trace(CAPS[0], reqs)
    with pytest.raises(ValueError, match="has no systemPrompt"):  # not on the plain wire
        transcript(trace, p.tables())
    messages = transcript(trace, p.tables(), meta=meta_methods(p))
    new, load = (
        m["params"] for m in messages if m.get("method") in ("session/new", "session/load")
    )
    assert new["systemPrompt"] == [{"type": "text", "text": "a"}] and "systemPrompt" not in load
    assert load["_meta"] == {
        "conn": 0,
        "systemPrompt": [{"type": "text", "text": "a"}],
        "systemPromptMode": "append",
    }
    puts = Profile("x", reads_prompt="meta", client_puts_prompt="meta")
    sent = transcript(Trace(CAPS[0], reqs[:3]), puts.tables(), meta=meta_methods(puts))
    new = sent[2]["params"]  # initialize, its answer, then session/new
    assert "systemPrompt" not in new and new["_meta"]["systemPrompt"] == [
        {"type": "text", "text": "a"}
    ]
    assert new["_meta"]["systemPromptMode"] == "append"


def test_a_shipped_meta_profiles_counterexample_shows_the_prompt_in_meta(tmp_path: Path) -> None:
    """The report's counterexample forms follow the profile's client: goose-9971 writes the
    prompt in ``_meta.systemPrompt``, so its transcript.ndjson carries no top-level field."""
    p = PROFILES["goose-9971"]
    trace = Trace(
        Caps(),
        (
            Request("connect"),
            Request("initialize"),
            Request("session_new", system_prompt=text("a")),
        ),
    )
    paths = write_counterexample(
        tmp_path, trace, p.tables(), "P1", p.revision, None, profile=p.name
    )
    lines = paths["transcript.ndjson"].read_text(encoding="utf-8").splitlines()
    new = next(m for m in map(json.loads, lines) if m.get("method") == "session/new")
    assert "systemPrompt" not in new["params"] and new["params"]["_meta"]["systemPrompt"] == "a"
