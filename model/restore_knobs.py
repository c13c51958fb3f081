"""The knobs of how a session comes back and where its prompt travels: their table edits.

Scope
    Six knobs' edits of a revision's tables, which ``model.knobs.EDITS`` maps them to: how a
    session is restored (``on_load``, ``fork_inherits``, ``store_survives_restart`` and
    ``restore``: from the store, or from the prompt load, resume and fork re-send) and where
    the prompt travels (``reads_prompt``, where the agent looks for it; ``client_puts_prompt``,
    where the client writes it: the revision's field or ``_meta.systemPrompt``). With them,
    what a profile that restores by re-send needs of the wire: ``ResentInMeta`` (a revision's
    ``admits`` widened to the re-sends in ``_meta``) and ``reopens_with_prompt`` (does the wire
    re-send the prompt in its own field). The knobs' meanings are documented once, in
    ``model.profiles``; their values and the order the edits run in, in ``model.knobs``.

Abstractions
    The edits rewrite rows, as the mutants do (``model.mutants``), and name effects registered
    here under names that say what they do: ``load_with_meta_prompt`` and its siblings apply a
    prompt re-sent in ``_meta`` as the revision's own re-send rows do (``APPLY_RESENT``), and a
    reader that looks where the prompt is not becomes ``X__unseen__F`` (below). An edit that
    finds no row it edits raises ValueError, which ``model.knobs.no_effect`` turns into a
    one-line refusal; ``client_puts_prompt``, where nothing reads the prompt, leaves the tables
    as they are.

Source
    ``_meta.systemPrompt``: the agents and clients that read or write the prompt there,
    aaif-goose/goose#9971 and openclaw/acpx#229 (``model.profiles``), in ACP's ``_meta``,
    reserved on every request for such metadata; the re-send in the revision's own field:
    v1-stable's and v2-draft's load, resume and fork (``model.revisions``, ``APPLY_RESENT``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from model.context import Ctx
from model.effects import EFFECTS, effect
from model.mutants import swap_effect
from model.revisions import APPLY_RESENT, KEEP_STORED, USE_DEFAULT
from model.tables import Row, Tables
from model.types import Request, Stage, evolve

# ---- how a session comes back from the store ----------------------------------------------------


def edit_on_load(t: Tables, _: Any) -> Tables:
    """Load and resume (whichever the revision has: v2-draft has no load) use the default."""
    edited = t
    for trigger in ("session_load", "session_resume"):
        stored = KEEP_STORED[trigger]
        if any(r.effect == stored for r in t.session):
            edited = swap_effect(edited, "session", stored, USE_DEFAULT[trigger])
    if edited is t:
        raise ValueError("no load or resume restores a stored prompt")
    return edited


def edit_fork_inherits(t: Tables, _: Any) -> Tables:
    return swap_effect(t, "session", KEEP_STORED["session_fork"], USE_DEFAULT["session_fork"])


def edit_store_survives_restart(t: Tables, _: Any) -> Tables:
    return swap_effect(t, "agent", "restart_keeping_store", "restart_forgetting_prompts")


# ---- restore by re-send: load, resume and fork take the prompt from the request --------------
# (the effects here; the edit, edit_restore, below)


@effect
def load_with_meta_prompt(c: Ctx) -> None:
    """Load under the prompt the request re-sends in ``_meta.systemPrompt``."""
    EFFECTS[APPLY_RESENT["session_load"]](c)


@effect
def resume_with_meta_prompt(c: Ctx) -> None:
    """Resume under the prompt the request re-sends in ``_meta.systemPrompt``."""
    EFFECTS[APPLY_RESENT["session_resume"]](c)


@effect
def fork_with_meta_prompt(c: Ctx) -> None:
    """Fork under the prompt the request re-sends in ``_meta.systemPrompt``."""
    EFFECTS[APPLY_RESENT["session_fork"]](c)


META_RESENT = {
    "session_load": "load_with_meta_prompt",
    "session_resume": "resume_with_meta_prompt",
    "session_fork": "fork_with_meta_prompt",
}
_META_READERS = tuple(META_RESENT.values())


# ---- where the prompt travels: the field or _meta.systemPrompt -------------------------------
#
# Both sides are table edits. The agent's ``reads_prompt`` and the client's ``puts_prompt``
# decide, row by row, whether a row that reads the request's prompt finds it: a reading effect
# X whose prompt is not where the agent looks becomes ``X__unseen__F``, which runs the fallback
# F (session/new: ``ignore_prompt_fields``; load, resume, fork: what the same request without a
# prompt does). ``reads_prompt = "meta"`` marks every field reader unseen (the modelled client
# writes the field); ``puts_prompt = "meta"`` turns unseen readers back into X (the agent looks
# in _meta and the prompt is there) and marks the field readers unseen (the field is empty).
# ``nowhere`` replaces the readers by their fallback outright: no client brings them back. The
# validation rows stay as they are in every case (the request is checked as a whole).

_UNSEEN: dict[str, tuple[str, bool]] = {}  # derived effect → (the reader, its row had no dest)


def _unseen(name: str, fallback: str, rejects: bool) -> str:
    """The reader ``name`` looking where the prompt is not: it runs ``fallback`` (registered
    once under a derived name; ``rejects``: the reader's row answered an error, no dest)."""
    derived = f"{name}__unseen__{fallback}"
    if derived not in EFFECTS:
        body = EFFECTS[fallback]

        def run(c: Ctx) -> None:
            body(c)

        run.__name__ = derived
        run.__doc__ = f"{name}, looking where the client did not put the prompt: {fallback}."
        effect(run)
        _UNSEEN[derived] = (name, rejects)
    return derived


_VALIDATION = frozenset(
    {
        "reject_empty_prompt",
        "reject_unsupported_block",
        "reject_unadvertised_mode",
        "reject_cannot_incorporate",
    }
)


# session/new reads the composed draft; a re-sent prompt is read from the request
_REQUEST_GUARD = {"exceeds_size_limit": "request_exceeds_size_limit"}


def _field_reader(table: str, r: Row) -> bool:
    """Does row ``r`` read the prompt the request carries in the revision's own field?"""
    if r.effect is None or r.effect in _UNSEEN or r.effect.split("__")[0] in _META_READERS:
        return False
    if table == "new_session":
        return r.effect.startswith("take_prompt_fields")
    return "carries_prompt" in r.guards and r.effect not in _VALIDATION


def _without_prompt(t: Tables, r: Row) -> Row:
    """The row the same load/resume/fork request would fire if it carried no prompt."""
    return next(
        x
        for x in t.session
        if x.trigger == r.trigger
        and set(x.sources) & set(r.sources)
        and "carries_prompt" not in x.guards
        and all(g in r.guards for g in x.guards)
    )


def _looks_away(t: Tables, table: str, r: Row) -> Row:
    """``r`` with its reader looking where the prompt is not."""
    assert r.effect is not None
    if table == "new_session":
        return r._replace(effect=_unseen(r.effect, "ignore_prompt_fields", False))
    plain = _without_prompt(t, r)
    assert plain.effect is not None
    return r._replace(dest=plain.dest, effect=_unseen(r.effect, plain.effect, r.dest is None))


def _map_readers(t: Tables, change: Callable[[Tables, str, Row], Row | None]) -> Tables:
    """Every row of new_session and session changed by ``change`` (None: left as it is);
    ValueError if no row changes."""
    edited = t
    for table in ("new_session", "session"):
        rows = tuple(change(t, table, r) or r for r in t.table(table))
        if rows != t.table(table):
            edited = edited.edit(table, rows)
    if edited == t:
        raise ValueError("no row reads the prompt")
    return edited


def edit_reads_prompt(t: Tables, value: Any) -> Tables:
    """``meta``: the agent looks in ``_meta.systemPrompt``, so the field a client writes is
    unseen; ``nowhere``: every reader runs its fallback, whatever the client does."""
    if value == "meta":
        return _map_readers(
            t, lambda t, n, r: _looks_away(t, n, r) if _field_reader(n, r) else None
        )
    t = swap_effect(t, "new_session", "take_prompt_fields", "ignore_prompt_fields")
    if any(_field_reader("session", r) for r in t.session):

        def fallback(t: Tables, n: str, r: Row) -> Row | None:
            if n != "session" or not _field_reader(n, r):
                return None
            plain = _without_prompt(t, r)
            return r._replace(dest=plain.dest, effect=plain.effect)

        t = _map_readers(t, fallback)
    return t


def edit_client_puts_prompt(t: Tables, _: Any) -> Tables:
    """The client writes the prompt in ``_meta.systemPrompt``: an agent that looks there finds
    it, one that reads the field finds nothing (an agent that reads nowhere: no change)."""

    def change(t: Tables, n: str, r: Row) -> Row | None:
        if r.effect in _UNSEEN:
            name, rejects = _UNSEEN[r.effect]
            return r._replace(effect=name, dest=None if rejects else r.dest)
        return _looks_away(t, n, r) if _field_reader(n, r) else None

    try:
        return _map_readers(t, change)
    except ValueError:
        return t  # nothing reads the prompt anywhere: the agent never sees it either way


def reopens_with_prompt(t: Tables) -> bool:
    """Does the wire re-send the prompt on load/resume/fork in its own field (v1-stable)?"""
    return any(r.effect in APPLY_RESENT.values() for r in t.session)


@dataclass(frozen=True)
class ResentInMeta:
    """A revision's ``admits`` widened for an agent that restores by re-send: load, resume and
    fork may carry the prompt session/new carries on that wire, in ``_meta.systemPrompt``."""

    base: Callable[[Request], bool]

    def __call__(self, req: Request) -> bool:
        if self.base(req):
            return True
        return (
            req.method in KEEP_STORED
            and req.system_prompt is not None
            and self.base(evolve(req, method="session_new", sid=None))
        )

    @property
    def profiles(self) -> Any:  # the base wire's capability profiles (WireAdmits)
        return getattr(self.base, "profiles", None)


def edit_restore(t: Tables, _: Any) -> Tables:
    """Load, resume and fork run under the prompt the request carries, else the default.

    On an envelope wire (v1-stable, v2-draft) a re-sent prompt is applied already: this is
    ``on_load`` and ``fork_inherits`` together (the profile says so and refuses it). Elsewhere
    the re-send travels in ``_meta.systemPrompt``: a row applies it before the stored-prompt
    row, which now uses the default, and the client may re-send on load/resume/fork what it
    may send on session/new (``client_resends`` then says what it re-sends)."""
    if reopens_with_prompt(t):
        return edit_fork_inherits(edit_on_load(t, True), False)
    new = next(r for r in t.client if r.trigger == "session_new")
    resend = tuple(dict.fromkeys((*new.guards, "prompt_has_a_block")))
    # a re-sent prompt is checked as session/new checks one (an error, nothing attached)
    rejects = [
        (tuple(_REQUEST_GUARD.get(g, g) for g in r.guards), r.effect)
        for r in t.new_session
        if r.dest is Stage.REJECTED and r.effect in _VALIDATION
    ]
    session: list[Row] = []
    for r in t.session:
        if r.trigger in KEEP_STORED and r.effect == KEEP_STORED[r.trigger]:
            guards = ("carries_prompt", *r.guards)
            session += [r._replace(dest=None, guards=(*guards, *g), effect=e) for g, e in rejects]
            session.append(r._replace(guards=guards, effect=META_RESENT[r.trigger]))
            r = r._replace(effect=USE_DEFAULT[r.trigger])
        session.append(r)
    reopened = {r.trigger for r in session if r.effect in META_RESENT.values()}
    client = tuple(
        r._replace(guards=tuple(dict.fromkeys((*r.guards, *resend))))
        if r.trigger in reopened
        else r
        for r in t.client
    )
    if not reopened:
        raise ValueError("no load, resume or fork restores a stored prompt")
    return t.edit("session", tuple(session)).edit("client", client)
