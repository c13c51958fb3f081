"""The finite parameter domains every engine draws requests from.

Scope
    A ``Domain`` says which capability profiles the agent may start or restart with, which
    systemPrompt / systemPromptMode values clients send, which client kinds connect, and how
    many connections and session ids exist, and which turn-level operations (a compaction
    turn, an extension method that sets the prompt, a proposal's read-back) it sends: none by
    default, so they are opt-in. The Hypothesis machine samples from it; the
    enumerator ``requests`` lists every request it allows, for exhaustive engines.

Abstractions
    ``restarts="same"`` keeps the agent's profile across restarts (an agent that is upgraded
    only in place); ``"any"`` lets it come back with any profile of the domain — the case
    behind open questions Q1–Q3 of acp-session-digest.md §7.

Source
    Parameter values follow rfd-client-system-prompt.final.mdx (text blocks, the empty array,
    the two modes, an unknown mode) and acp-session-digest.md §5 (block types).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from model.knobs import CHOICES, METHOD_FLAGS
from model.operations import OPERATION_KNOBS
from model.profiles import Profile
from model.revisions import REOPEN_LIVE
from model.tables import COMPACT, OPERATIONS, READ_PROMPT, SET_PROMPT
from model.types import BIG, Block, BlockKind, Caps, ClientKind, PromptCap, Request, Status, World

T = BlockKind.TEXT


def text(*symbols: str) -> tuple[Block, ...]:
    return tuple(Block(T, s) for s in symbols)


ALL_METHODS = {"load_session": True, "resume": True, "fork": True, "close": True, "delete": True}

PROFILES: tuple[Caps, ...] = tuple(
    Caps(system_prompt=sp, **methods, list=bool(methods))
    for sp in (PromptCap.OVERRIDE, PromptCap.APPEND, PromptCap.NONE)
    for methods in (ALL_METHODS, {})
)

PROMPTS: tuple[tuple[Block, ...] | None, ...] = (
    None,  # field omitted
    text("a"),
    text("a", "b"),
    text(""),  # an empty text block (Q7)
    text(BIG),  # over the agent's size limit (R11, Q6)
    (),  # empty array (R12, R15)
    (Block(BlockKind.IMAGE),),  # non-text (R14, R15)
    (*text("b"), Block(BlockKind.RESOURCE_LINK)),
)
MODES: tuple[str | None, ...] = (None, "append", "override", "replace")


@dataclass(frozen=True)
class Domain:
    profiles: tuple[Caps, ...] = PROFILES
    restarts: Literal["same", "any"] = "any"
    prompts: tuple[tuple[Block, ...] | None, ...] = PROMPTS
    modes: tuple[str | None, ...] = MODES
    clients: tuple[ClientKind, ...] = (ClientKind.CONFORMING, ClientKind.ADVERSARIAL)
    max_connections: int = 2
    max_sessions: int = 4  # session ids s1..sN are addressable
    # the revision's wire: which requests it can express (None: all); see Domain.restrict
    admits: Callable[[Request], bool] | None = None
    attach_prompts: bool = False  # load/resume/fork may carry systemPrompt (v1-stable)
    # what load/resume/fork carry when they carry a prompt (None: the same as ``prompts``)
    reopen_prompts: tuple[tuple[Block, ...], ...] | None = None
    # turn-level operations it sends (model.tables.OPERATIONS): none unless a check asks, so
    # every bound and revision explores what it did before (what a set-prompt request carries:
    # ``set_prompt_values``)
    operations: tuple[str, ...] = ()
    # load/resume of a session active on the connection that sends it (served by the reference
    # agent, Q11): a client that re-opens what it holds live. Off in the shipped scopes where
    # it multiplies the states (every re-open is a new attachment, with whatever it re-sends)
    reopen_live: bool = True

    @property
    def sids(self) -> tuple[str, ...]:
        return tuple(f"s{i}" for i in range(1, self.max_sessions + 1))

    def with_restarts(self, restarts: Literal["same", "any"]) -> Domain:
        return replace(self, restarts=restarts)

    def with_operations(self, *operations: str) -> Domain:
        """The domain that also sends ``operations`` (in ``OPERATIONS`` order, once each)."""
        unknown = [o for o in operations if o not in OPERATIONS]
        if unknown:
            raise ValueError(f"unknown operation {unknown[0]!r}: expected one of {OPERATIONS}")
        ops = tuple(o for o in OPERATIONS if o in (*self.operations, *operations))
        return replace(self, operations=ops)

    def without_over_limit(self) -> Domain:
        """The domain without the prompts over the agent's size limit (``BIG``), on session/new
        and re-sent alike: for an agent without a limit, or one a run must not send it to."""
        reopen = self.reopen_prompts
        kept = None if reopen is None else tuple(p for p in reopen if not _over_limit(p))
        prompts = tuple(p for p in self.prompts if not _over_limit(p))
        return replace(self, prompts=prompts, reopen_prompts=kept)

    def set_prompt_values(self) -> tuple[tuple[tuple[Block, ...], str | None], ...]:
        """The (systemPrompt, mode) pairs a set-prompt request carries (before ``admits``):
        one text no session/new or re-send of the domain uses (``"c"`` unless taken), in every
        mode of the domain.

        One value keeps the monitor's sets of seen slots small (each value in each mode is a
        slot more, and the states grow with the subsets of slots). A symbol no other prompt
        uses is never renamed by symmetry reduction (``simulations.engines.symmetry``: only
        permutations of the domain's prompt symbols are), so the reduction stays sound."""
        used = {b.text for p in (*self.prompts, *(self.reopen_prompts or ())) if p for b in p}
        fresh = next(x for x in (*"cdefgh", *(f"c{i}" for i in range(99))) if x not in used)
        return tuple((text(fresh), m) for m in self.modes)

    def restrict(self, admits: Callable[[Request], bool]) -> Domain:
        """The prompts and modes a revision's wire can carry, and only its requests.

        A prompt stays if some mode carries it (``"append"`` is added where the wire needs the
        mode spelled out: an omitted mode, or none of the modes, cannot carry a prompt there);
        a mode stays if some prompt (or none) goes with it. Requests the
        wire cannot express are filtered out of ``requests``. Where ``admits`` also says which
        profiles its wire explores (``model.revisions.WireAdmits.profiles``: alt-instructions
        adds a replace-only agent), the profiles are those.
        """

        def new(p: tuple[Block, ...] | None, m: str | None) -> Request:
            return Request("session_new", system_prompt=p, mode=m)

        modes = self.modes
        sent = [p for p in self.prompts if p is not None]
        carried = any(admits(new(p, m)) for p in sent for m in modes)
        omitted = None in modes and any(admits(new(p, None)) for p in sent)
        if "append" not in modes and (not carried or (None in modes and not omitted)):
            modes = (*modes, "append")  # omitted means append (R21): this wire spells it out
        prompts = tuple(p for p in self.prompts if any(admits(new(p, m)) for m in modes))
        modes = tuple(m for m in modes if any(admits(new(p, m)) for p in prompts))
        attach = any(  # any of them: v2-draft has resume and fork but no session/load
            admits(Request(m, sid="s1", system_prompt=text("a"), mode=mode))
            for m in ("session_load", "session_resume", "session_fork")
            for mode in ("append", None)  # None: a wire without modes (a _meta re-send)
        )
        profiles = self.profiles
        widen: Callable[[tuple[Caps, ...]], tuple[Caps, ...]] | None
        widen = getattr(admits, "profiles", None)
        if widen is not None:
            profiles = widen(profiles)
        return replace(
            self,
            profiles=profiles,
            prompts=prompts,
            modes=modes,
            admits=admits,
            attach_prompts=attach,
        )

    def requests(self, w: World, live: bool = True) -> tuple[Request, ...]:
        """Every request the domain allows in ``w`` (for exhaustive engines); ``live=False``
        leaves it to the caller to drop the re-opens of live sessions ``reopen_live`` forbids
        (``unless_live``), so the list depends on ``w`` only through its counts."""
        reqs = self._requests(w)
        every = tuple(reqs if self.admits is None else filter(self.admits, reqs))
        return self.unless_live(w, every) if live else every

    def unless_live(self, w: World, reqs: tuple[Request, ...]) -> tuple[Request, ...]:
        """``reqs`` without the load/resume of a session live on the sending connection, where
        the domain does not re-open live sessions."""
        if self.reopen_live:
            return reqs
        live = {(s.conn, s.sid) for s in w.agent.store if s.status is Status.ACTIVE}
        if not live:
            return reqs
        return tuple(r for r in reqs if r.method not in REOPEN_LIVE or (r.conn, r.sid) not in live)

    def _requests(self, w: World) -> Iterator[Request]:
        if len(w.connections) < self.max_connections:
            for client in self.clients:
                yield Request("connect", client=client)
        if self.restarts == "same":
            yield Request("restart")
        else:
            for p in self.profiles:
                yield Request("restart", profile=p)
        for conn in range(len(w.connections)):
            yield Request("initialize", conn)
            yield Request("session_list", conn)
            for sp in self.prompts:
                for mode in self.modes:
                    yield Request("session_new", conn, system_prompt=sp, mode=mode)
            for method in ("session_load", "session_resume", "session_fork"):
                for sid in self.sids:
                    yield Request(method, conn, sid=sid)
                    if self.attach_prompts:
                        reopen = (
                            self.prompts if self.reopen_prompts is None else self.reopen_prompts
                        )
                        for sp in reopen:
                            for mode in self.modes:
                                if sp is not None:
                                    yield Request(
                                        method, conn, sid=sid, system_prompt=sp, mode=mode
                                    )
            for method in ("session_close", "session_delete", "session_prompt"):
                for sid in self.sids:
                    yield Request(method, conn, sid=sid)
            if COMPACT in self.operations:
                for sid in self.sids:
                    yield Request(COMPACT, conn, sid=sid)
            if SET_PROMPT in self.operations:
                values = self.set_prompt_values()
                for sid in self.sids:
                    for sp, mode in values:
                        yield Request(SET_PROMPT, conn, sid=sid, system_prompt=sp, mode=mode)
            if READ_PROMPT in self.operations:
                for sid in self.sids:
                    yield Request(READ_PROMPT, conn, sid=sid)


DEFAULT_DOMAIN = Domain()


# ACP v1 as stabilised: session/new with no prompt or a text, and every kind of re-sent value
# on load, resume and fork (valid texts, an oversized one, an empty array, an image)
V1_DOMAIN = replace(
    DEFAULT_DOMAIN,
    prompts=(None, text("a"), text("b")),
    reopen_prompts=(text("a"), text("b"), text(BIG), (), (Block(BlockKind.IMAGE),)),
    max_sessions=2,
)


# alt-instructions: session/new with every text its wire carries (a text, the empty text of A7,
# none, an oversized one; the machine favours the first two) and every mode, two sessions (fork,
# A13); restrict it with the revision's admits, which also adds the replace-only agents
ALT_DOMAIN = replace(DEFAULT_DOMAIN, prompts=(text("a"), text(""), None, text(BIG)), max_sessions=2)


def domain_for(revision: str, admits: Callable[[Request], bool]) -> Domain:
    """The Hypothesis domain a revision's mutants are hunted in: the default one for
    rfd-final, else a focused one over what the revision's wire carries."""
    if revision == "rfd-final":
        return DEFAULT_DOMAIN
    return (ALT_DOMAIN if revision == "alt-instructions" else V1_DOMAIN).restrict(admits)


def _advertised_by(profiles: tuple[Caps, ...], caps: frozenset[PromptCap]) -> tuple[Caps, ...]:
    """``profiles`` as an agent that advertises only ``caps`` has them: each keeps its session
    methods and takes the advertised capability (the first of ``caps`` in ``PromptCap`` order
    where its own is not among them), so a scope built around other capabilities (a restart
    scope of override and unaware agents, say) still explores this agent's lifecycle."""
    first = next(c for c in PromptCap if c in caps)
    return tuple(
        dict.fromkeys(
            p if p.system_prompt in caps else replace(p, system_prompt=first) for p in profiles
        )
    )


def _over_limit(prompt: tuple[Block, ...] | None) -> bool:
    return any(b.kind is BlockKind.TEXT and b.text == BIG for b in prompt or ())


def operations_for(profile: Profile | None) -> tuple[str, ...]:
    """The turn-level operations ``profile``'s knobs need sent (``model.operations``): those
    whose knob departs from the reference value. None for a revision, mutant or amendment."""
    if profile is None:
        return ()
    return tuple(
        op for knob, op in OPERATION_KNOBS.items() if getattr(profile, knob) != CHOICES[knob][0]
    )


def profile_domain(d: Domain, profile: Profile) -> Domain | None:
    """``d`` as ``profile``'s agent meets it: every capability profile of ``d`` with the
    systemPrompt capability it advertises (``advertises_prompt``: a profile advertising
    another takes this agent's, keeping its methods, so no scope is lost), each with only the
    session methods it advertises (``advertises_methods``) and, for an agent without a size
    limit (``size_limit = "none"``), no prompt over one — ``BIG`` stands for a prompt over the
    agent's limit, and this agent has none to be over; and with the turn-level operations its
    knobs need sent (``operations_for``). None when ``d`` has no capability profile. The one
    place a profile narrows a domain: the CLI's and the API's checks, both engines, and the
    report's profile rows."""
    d = d.with_operations(*operations_for(profile))
    caps = profile.prompt_caps()
    if caps is not None:
        kept = _advertised_by(d.profiles, caps)
        if not kept:
            return None
        d = replace(d, profiles=kept)
    methods = profile.methods()
    if methods is not None:

        def only(c: Caps) -> Caps:
            flags: dict[str, Any] = {f: getattr(c, f) and f in methods for f in METHOD_FLAGS}
            return replace(c, **flags)

        d = replace(d, profiles=tuple(dict.fromkeys(only(c) for c in d.profiles)))
    if profile.size_limit == "none":
        d = d.without_over_limit()
    return d
