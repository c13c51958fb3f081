"""The knobs of an implementation profile: each knob's values and its edit of a revision's tables.

Scope
    ``CHOICES`` lists every knob a profile (``model.profiles``) may set and the values it
    takes, the first being the revision's reference behaviour; ``OPEN_CHOICES`` marks the
    values that answer a question the texts leave open; ``CLIENT_KNOBS`` the client's side.
    ``EDITS`` turns one knob value into an edit of a revision's tables (the same row edits the
    mutants use, ``model.mutants``), applied in ``edit_order``; ``no_effect`` says why a knob
    value would change nothing on a revision, so a profile can refuse it in one line. The edits
    of how a session comes back and where its prompt travels (``on_load``, ``fork_inherits``,
    ``store_survives_restart``, ``restore``, ``reads_prompt``, ``client_puts_prompt``) are
    ``model.restore_knobs``'s; the others, and the mode readings they share, are here. The
    knobs' meanings are documented once, in ``model.profiles``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from model import operations
from model.context import Ctx
from model.effects import EFFECTS, compose_default, effect, ignore_prompt_fields
from model.mutants import edit_rows, insert_before, swap_effect, swap_guard
from model.restore_knobs import (
    META_RESENT,
    ResentInMeta,
    edit_client_puts_prompt,
    edit_fork_inherits,
    edit_on_load,
    edit_reads_prompt,
    edit_restore,
    edit_store_survives_restart,
)
from model.revisions import (
    APPLY_RESENT,
    KEEP_STORED,
    REVISIONS,
    refuse_active_reopen,
)
from model.tables import Row, Tables
from model.types import (
    INVALID_PARAMS,
    Block,
    BlockKind,
    Mode,
    PromptCap,
    Reason,
    Reply,
    Request,
    Stage,
    Status,
    evolve,
)

# each knob's values as a type (``Profile``'s fields are typed by them); the first is the
# revision's reference behaviour
OnLoad = Literal["stored", "default"]
ForkInherits = Literal[True, False]
StoreSurvivesRestart = Literal[True, False]
BlankText = Literal["keep", "absent", "reject"]
BarePrompt = Literal["append", "replace"]
SizeLimit = Literal["internal_error", "invalid_params", "drop", "none"]
ReadsPrompt = Literal["field", "meta", "nowhere"]
EmptyArray = Literal["reject", "absent"]
ModeAlone = Literal["reject", "ignore"]
UnsupportedBlocks = Literal["reject", "drop"]
UnadvertisedOverride = Literal["reject", "accept", "append"]
TextBlocks = Literal["accept", "reject"]
OverrideMode = Literal["replace", "append"]
AppendMode = Literal["append", "override"]
OnDiffer = Literal["apply", "keep", "reject"]
AdvertisesPrompt = Literal["as_bound", "none", "append", "override", "meta_only"]
HeldSessions = Literal["apply", "keep"]
AdvertisesMethods = Literal["as_bound", "none", "load_only", "no_fork", "meta_only"]
Restore = Literal["stored", "resent"]
ClientSendsPrompt = Literal["capability", "always", "never"]
ClientOverride = Literal["capability", "always"]
ClientResends = Literal["any", "same", "none"]
ClientPutsPrompt = Literal["field", "meta"]
Compaction = Literal["keep", "lose"]
SetPrompt = Literal["none", "replace"]
ActiveReopen = Literal["serve", "refuse"]

CHOICES: dict[str, tuple[Any, ...]] = {
    "on_load": get_args(OnLoad),
    "fork_inherits": get_args(ForkInherits),
    "store_survives_restart": get_args(StoreSurvivesRestart),
    "blank_text": get_args(BlankText),
    "bare_prompt": get_args(BarePrompt),
    "size_limit": get_args(SizeLimit),
    "reads_prompt": get_args(ReadsPrompt),
    "empty_array": get_args(EmptyArray),
    "mode_alone": get_args(ModeAlone),
    "unsupported_blocks": get_args(UnsupportedBlocks),
    "unadvertised_override": get_args(UnadvertisedOverride),
    "text_blocks": get_args(TextBlocks),
    "override_mode": get_args(OverrideMode),
    "append_mode": get_args(AppendMode),
    "on_differ": get_args(OnDiffer),
    "advertises_prompt": get_args(AdvertisesPrompt),
    "held_sessions": get_args(HeldSessions),
    "advertises_methods": get_args(AdvertisesMethods),
    "restore": get_args(Restore),
    # the client's side (a client profile sets these; see CLIENT_KNOBS)
    "client_sends_prompt": get_args(ClientSendsPrompt),
    "client_override": get_args(ClientOverride),
    "client_resends": get_args(ClientResends),
    "client_puts_prompt": get_args(ClientPutsPrompt),
    # turn-level operations (model.operations): each turns its operation on in the bound
    "compaction": get_args(Compaction),
    "set_prompt": get_args(SetPrompt),
    # Q11: load/resume of a session active on the same connection
    "active_reopen": get_args(ActiveReopen),
}
# knob values that answer a question the texts leave open: a check reports them as choices
# (``Profile.open_choices``) and no rule's check charges them
OPEN_CHOICES: dict[tuple[str, Any], str] = {
    ("blank_text", "reject"): "Q7: neither the RFD nor the v1 schema says whether a prompt of "
    "empty text may be refused; -32602 creates nothing, so no MUST is broken",
    ("size_limit", "invalid_params"): "Q6: R11 asks for an error over the limit, of any code",
    ("on_differ", "keep"): "T16: nothing says what a differing re-sent prompt does",
    ("on_differ", "reject"): "T16: nothing says what a differing re-sent prompt does",
    ("held_sessions", "keep"): "T16: nothing says what a differing re-sent prompt does",
    ("active_reopen", "refuse"): "Q11: nothing says whether load or resume of a session "
    "active on the same connection is served",
}
# a client profile's knobs, as its file names them → the Profile field they set
CLIENT_KNOBS = {k.removeprefix("client_"): k for k in CHOICES if k.startswith("client_")}


# the knobs that say where the agent looks for the prompt, and where the client puts it: applied
# last, so the readers every other knob made (mode readings, re-send answers) look there too
_WHERE = ("reads_prompt", "client_puts_prompt")


def edit_order(knob: str) -> tuple[int, int]:
    """Restore first (it adds the rows other knobs read: the re-sends in ``_meta``), where the
    prompt is read last, the others in ``CHOICES`` order."""
    rank = 0 if knob == "restore" else 2 if knob in _WHERE else 1
    return rank, list(CHOICES).index(knob)


def no_effect(revision: str, knob: str, value: Any, restore: str = "stored") -> str:
    """Why setting ``knob`` to ``value`` would change nothing on ``revision`` ('' if it does):
    its edit matches no row, leaves the tables as they were, or is about a request the
    revision's wire cannot carry (a prompt without a mode on a wire that requires one). A
    client knob is judged on the wire as ``restore`` widens it (re-sends in ``_meta``)."""
    rev = REVISIONS[revision]
    base, admits = rev.tables, rev.admits
    if restore == "resent" and knob in CLIENT_KNOBS.values():
        base, admits = edit_restore(base, restore), ResentInMeta(rev.admits)
    try:
        edited = EDITS[knob](base, value)
    except ValueError:
        return "the tables have no row it edits"
    if edited == base and knob not in DOMAIN_KNOBS:
        return "it leaves the tables as they are"
    needs = _NEEDS.get(knob)
    if needs is not None and not any(admits(r) for r in needs[0]):
        return f"its wire cannot carry {needs[1]}"
    return ""


@effect
def drop_blank_prompt(c: Ctx) -> None:
    """A prompt of empty text is treated as none at all: nothing stored, the default slot."""
    ignore_prompt_fields(c)
    compose_default(c)


def _blank(t: Tables, value: Any) -> Tables:
    if value == "reject":
        return _blank_reject(t)
    blank = Row(
        "advance", Stage.VALID, Stage.COMPOSED, ("prompt_is_blank",), "drop_blank_prompt", ()
    )
    return insert_before(t, "new_session", lambda r: r.effect == "compose_default", blank)


@effect
def drop_oversized_prompt(c: Ctx) -> None:
    """A prompt over the size limit is dropped as if none was sent: nothing stored, the default
    slot (an agent that stored it would bring it back on load, a prompt the session never ran)."""
    ignore_prompt_fields(c)
    compose_default(c)


@effect
def reject_blank_prompt(c: Ctx) -> None:
    c.reply = Reply(code=INVALID_PARAMS, reason=Reason.EMPTY_PROMPT)


@effect
def reject_oversized_as_invalid_params(c: Ctx) -> None:
    c.reply = Reply(code=INVALID_PARAMS, reason=Reason.CANNOT_INCORPORATE)


def _blank_reject(t: Tables) -> Tables:
    row = Row(
        "advance", Stage.VALID, Stage.REJECTED, ("prompt_is_blank",), "reject_blank_prompt", ()
    )
    return insert_before(t, "new_session", lambda r: r.effect == "reject_cannot_incorporate", row)


def _bare(t: Tables, _: Any) -> Tables:
    """A prompt without a mode is read as override (replace), wherever the agent reads one."""
    if not any(r.effect == "take_prompt_fields" for r in t.new_session):
        raise ValueError("no row reads a bare prompt")
    return _with_override_row(_read_modes(t, _BARE_AS_OVERRIDE))


def _with_override_row(t: Tables) -> Tables:
    """``t`` with an override composition before append, where (the string revisions) it has
    none: knobs that read a prompt as override need it."""
    if any(r.effect == "compose_override" for r in t.new_session):
        return t
    row = Row("advance", Stage.VALID, Stage.COMPOSED, ("is_override",), "compose_override", ())
    return insert_before(t, "new_session", lambda r: r.effect == "compose_append", row)


def _size(t: Tables, value: Any) -> Tables:
    if value == "none":  # no row fires: the bound sends no prompt over a limit it lacks
        return t
    if value == "invalid_params":
        return swap_effect(
            t, "new_session", "reject_cannot_incorporate", "reject_oversized_as_invalid_params"
        )
    return edit_rows(
        t,
        "new_session",
        lambda r: r.effect == "reject_cannot_incorporate",
        lambda r: r._replace(dest=Stage.COMPOSED, effect="drop_oversized_prompt"),
    )


def _as_if_absent(reject: str) -> Callable[[Tables, Any], Tables]:
    """Lenient validation: a request the revision answers with ``reject`` (-32602) is taken as
    if it carried no prompt. On session/new the session is created under the default prompt;
    on a load, resume or fork that re-sends a prompt (v1-stable) the request goes on as the
    same request without one would (the stored or the parent's prompt)."""

    def edit(t: Tables, _: Any) -> Tables:
        hit = False
        if any(r.effect == reject for r in t.new_session):
            t = edit_rows(
                t,
                "new_session",
                lambda r: r.effect == reject,
                lambda r: r._replace(dest=Stage.COMPOSED, effect="drop_blank_prompt"),
            )
            hit = True
        for trigger in ("session_load", "session_resume", "session_fork"):
            rows = [r for r in t.session if r.trigger == trigger]
            plain = next((r for r in rows if r.guards == ("prompt_capability_here",)), None)
            if plain is None or not any(r.effect == reject for r in rows):
                continue
            t = edit_rows(
                t,
                "session",
                lambda r, tr=trigger: r.trigger == tr and r.effect == reject,  # type: ignore[misc]
                lambda r, p=plain: r._replace(dest=p.dest, effect=p.effect),  # type: ignore[misc]
            )
            hit = True
        if not hit:
            raise ValueError(f"no row answers {reject}")
        return t

    return edit


_ANY = "*"  # a mode mapping's key for "whatever the request says"


_READINGS: dict[str, tuple[str, tuple[tuple[str | None, str], ...]]] = {}  # derived → reading


def _reading(name: str, mapping: tuple[tuple[str | None, str], ...]) -> str:
    """The effect ``name`` run as if the request's mode said otherwise (``mapping``: request
    mode → mode read; ``_ANY`` maps every mode), registered once under a derived name. The
    agent stores the mode it read, so restoring the session composes it the same way again.
    A reading of a reading reads through both (``_merged``): override read as append and
    append as override is the two swapped, not the second lost."""
    if name in _READINGS:
        base, first = _READINGS[name]
        return _reading(base, _merged(first, mapping))
    derived = name + "".join(f"__{k or 'omitted'}_as_{v}" for k, v in mapping)
    _READINGS[derived] = (name, mapping)
    if derived not in EFFECTS:
        original = EFFECTS[name]
        table = dict(mapping)

        def run(c: Ctx) -> None:
            req = c.req
            mode = table.get(_ANY, table.get(req.mode, req.mode))
            c.req = evolve(req, mode=mode)
            try:
                original(c)
            finally:
                c.req = req

        run.__name__ = derived
        effect(run)
    return derived


def _merged(
    first: tuple[tuple[str | None, str], ...], then: tuple[tuple[str | None, str], ...]
) -> tuple[tuple[str | None, str], ...]:
    """Two readings of one request's mode as one: ``first``'s entries, then ``then``'s for the
    modes ``first`` leaves as sent (each reads the mode the request carries, not the other's
    result), in a fixed order so equal readings share a name."""
    table = dict(first)
    for k, v in then:
        table.setdefault(k, v)
    return tuple(sorted(table.items(), key=lambda kv: (kv[0] is not None, kv[0] or "")))


# the effects that read a request's mode (the _meta re-sends of restore = "resent" included)
_READERS = ("take_prompt_fields", *APPLY_RESENT.values(), *META_RESENT.values())
_AS_APPEND: tuple[tuple[str | None, str], ...] = ((_ANY, Mode.APPEND.value),)
_OVERRIDE_AS_APPEND: tuple[tuple[str | None, str], ...] = (
    (Mode.OVERRIDE.value, Mode.APPEND.value),
)
_APPEND_AS_OVERRIDE: tuple[tuple[str | None, str], ...] = (
    (None, Mode.OVERRIDE.value),
    (Mode.APPEND.value, Mode.OVERRIDE.value),
)
_BARE_AS_OVERRIDE: tuple[tuple[str | None, str], ...] = ((None, Mode.OVERRIDE.value),)
_MAPPINGS = (_AS_APPEND, _OVERRIDE_AS_APPEND, _APPEND_AS_OVERRIDE, _BARE_AS_OVERRIDE)
for _name in _READERS:  # registered on import, like every other effect (and their combinations)
    for _i, _mapping in enumerate(_MAPPINGS):
        _once = _reading(_name, _mapping)
        for _then in _MAPPINGS[_i + 1 :]:
            _twice = _reading(_once, _then)
            for _last in _MAPPINGS:
                _reading(_twice, _last)


def _reads_mode(name: str | None) -> bool:
    """Does effect ``name`` read the request's mode (a reader, or a reading of one)?"""
    return name is not None and (name in _READERS or name in _READINGS)


def _read_modes(t: Tables, mapping: tuple[tuple[str | None, str], ...]) -> Tables:
    """Every effect that reads a request's prompt and mode reads the mode through ``mapping``
    (on top of any reading another knob made)."""
    for table in ("new_session", "session"):
        names = dict.fromkeys(r.effect for r in t.table(table) if _reads_mode(r.effect))
        for name in names:
            assert name is not None
            t = swap_effect(t, table, name, _reading(name, mapping))
    return t


def _unadvertised(t: Tables, value: Any) -> Tables:
    """An override mode the agent did not advertise (or an unknown one): ``accept`` applies it
    as asked, ``append`` applies the prompt in append mode instead of answering -32602."""
    if value == "accept":
        t = swap_guard(t, "new_session", "mode_not_advertised", "mode_is_unknown")
        if any("mode_not_advertised" in r.guards for r in t.session):
            t = swap_guard(t, "session", "mode_not_advertised", "mode_is_unknown")
        return t
    t = edit_rows(
        t,
        "new_session",
        lambda r: r.effect == "reject_unadvertised_mode",
        lambda r: r._replace(dest=Stage.VALID, effect=_reading("take_prompt_fields", _AS_APPEND)),
    )
    for trigger, sent in APPLY_RESENT.items():
        rows = [r for r in t.session if r.trigger == trigger]
        row = next((r for r in rows if r.effect == sent), None)
        if row is None or not any(r.effect == "reject_unadvertised_mode" for r in rows):
            continue
        t = edit_rows(
            t,
            "session",
            lambda r, tr=trigger: r.trigger == tr and r.effect == "reject_unadvertised_mode",  # type: ignore[misc]
            lambda r, p=row: r._replace(dest=p.dest, effect=_reading(p.effect, _AS_APPEND)),  # type: ignore[misc]
        )
    return t


def _text_blocks(t: Tables, _: Any) -> Tables:
    """Text blocks refused like any other block (-32602 to every prompt)."""
    t = swap_guard(t, "new_session", "has_non_text_block", "has_any_block")
    if any("has_non_text_block" in r.guards for r in t.session):
        t = swap_guard(t, "session", "has_non_text_block", "has_any_block")
    return t


def _override_mode(t: Tables, _: Any) -> Tables:
    """Override read as append: the base prompt stays in front, on every request that carries
    a prompt, and the session is stored (and restored) that way."""
    if not any(r.effect == "compose_override" for r in t.new_session):
        raise ValueError("no override mode on this wire")
    return _read_modes(t, _OVERRIDE_AS_APPEND)


def _append_mode(t: Tables, _: Any) -> Tables:
    """Append (asked for or by default) read as override: the base prompt is dropped."""
    return _with_override_row(_read_modes(t, _APPEND_AS_OVERRIDE))


def _client_sends(t: Tables, value: Any) -> Tables:
    """``always``: the client sends its prompt whether or not the agent advertises the
    capability (it gates on the agent's name, say); ``never``: it sends none, anywhere."""
    if value == "always":
        return swap_guard(t, "client", "prompt_allowed_by_capability", None)
    return edit_rows(
        t,
        "client",
        lambda r: r.trigger == "session_new" or "prompt_allowed_by_capability" in r.guards,
        lambda r: r._replace(guards=(*r.guards, "carries_no_prompt")),
    )


def _client_override(t: Tables, _: Any) -> Tables:
    """The client asks for override whether or not the agent advertises it."""
    return swap_guard(t, "client", "override_allowed_by_capability", None)


def _client_resends(t: Tables, value: Any) -> Tables:
    """What the client re-sends on load/resume/fork where the wire carries it (T6): the
    prompt it created the session with (``same``) or nothing (``none``)."""
    guard = "resends_stored_prompt" if value == "same" else "carries_no_prompt"
    return edit_rows(
        t,
        "client",
        lambda r: r.trigger != "session_new" and "prompt_has_a_block" in r.guards,
        lambda r: r._replace(guards=(*r.guards, guard)),
    )


ADVERTISED: dict[str, frozenset[PromptCap] | None] = {
    "as_bound": None,
    "none": frozenset({PromptCap.NONE}),
    "append": frozenset({PromptCap.APPEND}),
    "override": frozenset({PromptCap.OVERRIDE}),
    "meta_only": frozenset({PromptCap.NONE}),
}
# knobs that restrict the bound, not (only) the tables: what the agent advertises, and an agent
# without a size limit (no prompt is over it; simulations.api.profile_domain)
DOMAIN_KNOBS = frozenset({"advertises_prompt", "size_limit", "advertises_methods"})


def _advertises(t: Tables, value: Any) -> Tables:
    """What the agent advertises is the bound's business (``Profile.prompt_caps``); an agent
    that advertises only in ``_meta`` (``meta_only``) still takes and applies the prompt, and
    restores or forks it, as if it advertised append."""
    if value != "meta_only":
        return t
    t = _without_rows(t, "new_session", "agent_lacks_prompt_capability")
    return swap_guard(t, "session", "prompt_capability_here", None)


def _without_rows(t: Tables, table: str, guard: str) -> Tables:
    """``t`` without the rows of ``table`` that ``guard`` guards (ValueError: there are none)."""
    rows = t.table(table)
    kept = tuple(r for r in rows if guard not in r.guards)
    if kept == rows:
        raise ValueError(f"no row of {table} is guarded by {guard}")
    return t.edit(table, kept)


# the optional session methods (Caps fields) each ``advertises_methods`` value advertises
METHOD_FLAGS = ("load_session", "resume", "fork", "close", "delete", "list")
METHODS: dict[str, frozenset[str] | None] = {
    "as_bound": None,
    "none": frozenset(),
    "load_only": frozenset({"load_session"}),
    "no_fork": frozenset(METHOD_FLAGS) - {"fork"},  # fork is UNSTABLE in ACP v1
    "meta_only": frozenset(),
}


def _advertises_methods(t: Tables, value: Any) -> Tables:
    """Which session methods the agent advertises is the bound's business
    (``Profile.methods``); one that advertises none in the standard place (``meta_only``)
    still serves every method, instead of answering -32601."""
    if value != "meta_only":
        return t
    return _without_rows(t, "connection", "method_not_advertised")


def _applying(t: Tables, trigger: str, sent: str) -> Row | None:
    """The row of ``trigger`` that applies a re-sent prompt (``sent``, or a reading of it that
    a mode knob made), if any."""
    for r in t.session:
        if r.trigger != trigger or r.effect is None or r.effect.split("__")[0] != sent:
            continue
        if r.effect == sent or r.effect in _READINGS:
            return r
    return None


def _on_differ(t: Tables, value: Any) -> Tables:
    """A prompt re-sent on load/resume/fork that differs from the one the session was created
    with (T16, where the spec is silent): ``keep`` the stored one, or ``reject`` it (-32602,
    nothing attached). The reference agent applies it."""
    hit = False
    for trigger, sent in APPLY_RESENT.items():
        apply = _applying(t, trigger, sent)
        if apply is None:
            continue
        guards = (*apply.guards, "prompt_differs_from_stored")
        if value == "reject":
            row = apply._replace(dest=None, guards=guards, effect="reject_differing_prompt")
        else:
            row = apply._replace(guards=guards, effect=KEEP_STORED[trigger])
        t = insert_before(t, "session", lambda r, a=apply: r == a, row)  # type: ignore[misc]
        hit = True
    if not hit:
        raise ValueError("no load, resume or fork applies a re-sent prompt")
    return t


@effect
def restart_rebuilding_closed(c: Ctx) -> None:
    """A restart as the reference agent's (``restart_keeping_store``), except that closed
    sessions go back to the store too: the new process holds none of them in memory."""
    EFFECTS["restart_keeping_store"](c)
    agent = c.world.agent
    store = tuple(
        evolve(s, status=Status.STORED) if s.status is Status.CLOSED else s for s in agent.store
    )
    c.world = evolve(c.world, agent=evolve(agent, store=store))


def _active_refused(t: Tables, _: Any) -> Tables:
    return refuse_active_reopen(t)


def _held(t: Tables, _: Any) -> Tables:
    """Hidden process state: a prompt re-sent on load/resume/fork is ignored (the session keeps
    what it was created with) while the process still holds the session — attached, or closed
    since the last restart — and applied to a session rebuilt from the store after a restart."""
    hit = False
    for trigger, sent in APPLY_RESENT.items():
        apply = _applying(t, trigger, sent)
        if apply is None:
            continue
        row = apply._replace(guards=(*apply.guards, "session_is_held"), effect=KEEP_STORED[trigger])
        t = insert_before(t, "session", lambda r, a=apply: r == a, row)  # type: ignore[misc]
        hit = True
    if not hit:
        raise ValueError("no load, resume or fork applies a re-sent prompt")
    return swap_effect(t, "agent", "restart_keeping_store", "restart_rebuilding_closed")


EDITS: dict[str, Callable[[Tables, Any], Tables]] = {
    "on_load": edit_on_load,
    "fork_inherits": edit_fork_inherits,
    "store_survives_restart": edit_store_survives_restart,
    "blank_text": _blank,
    "bare_prompt": _bare,
    "size_limit": _size,
    "reads_prompt": edit_reads_prompt,
    "empty_array": _as_if_absent("reject_empty_prompt"),
    "mode_alone": _as_if_absent("reject_mode_without_prompt"),
    "unsupported_blocks": _as_if_absent("reject_unsupported_block"),
    "unadvertised_override": _unadvertised,
    "text_blocks": _text_blocks,
    "override_mode": _override_mode,
    "append_mode": _append_mode,
    "on_differ": _on_differ,
    "advertises_prompt": _advertises,
    "held_sessions": _held,
    "active_reopen": _active_refused,
    "advertises_methods": _advertises_methods,
    "client_sends_prompt": _client_sends,
    "client_override": _client_override,
    "client_resends": _client_resends,
    "restore": edit_restore,
    "client_puts_prompt": edit_client_puts_prompt,
    "compaction": operations.compaction,
    "set_prompt": operations.set_prompt,
}

# the request a knob is about, where some wire cannot carry it, and how to say so
_TEXT = (Block(BlockKind.TEXT, "a"),)
_IMAGE = (Block(BlockKind.IMAGE, "a"),)
_NEEDS: dict[str, tuple[tuple[Request, ...], str]] = {  # any one of the requests will do
    "bare_prompt": ((Request("session_new", system_prompt=_TEXT),), "a prompt without a mode"),
    "mode_alone": ((Request("session_new", mode="append"),), "a mode without a prompt"),
    "empty_array": (
        tuple(Request("session_new", system_prompt=(), mode=m) for m in (None, "append")),
        "an empty prompt array",
    ),
    "unsupported_blocks": (
        tuple(Request("session_new", system_prompt=_IMAGE, mode=m) for m in (None, "append")),
        "a block other than text",
    ),
}
