"""World state of the client-system-prompt model: enums and frozen, hashable dataclasses.

Scope
    One agent process (its advertised capability profile, its base prompt and its durable
    session store), the client connections open to it, and a spec monitor that records what
    the wire and the model's system slot showed. Everything is immutable and hashable, so a
    ``World`` can be a node of an exhaustive state graph and a Hypothesis ``note()``.

Abstractions
    Prompt texts are abstract symbols (``"a"``, ``"b"``, ``""`` for an empty text block and
    ``"big"`` for a text over the agent's size limit); the agent's base prompt (identity plus
    guardrails) is the single symbol ``BASE``. A composed system prompt is the tuple of symbols
    in slot order: separators and headings are implementation-defined in the RFD, so they are
    not modelled. A prompt turn is atomic (no streaming, no cancellation). Omitted and ``null``
    capability values are collapsed because the spec treats them alike.

Source
    The RFD docs/rfds/client-system-prompt.mdx at revision 4969bbbf (agentclientprotocol/
    agent-client-protocol PR #1237), and ACP ``main`` at b7f0005 (2026-08-22, schema crate
    1.21.0): docs/protocol/v1/initialization.mdx, session-setup.mdx, session-list.mdx and
    session-delete.mdx, the session-fork, session-resume and session-close RFDs, and
    schema/v1/schema.json and schema.unstable.json.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, TypeVar

BASE = "BASE"  # the agent's own built-in instructions: identity, guardrails, internal config
BIG = "big"  # a text block larger than the agent's size limit (R11's "cannot incorporate")

Slot = tuple[str, ...]  # what the model's system slot holds, in order
_T = TypeVar("_T")
_FIELDS: dict[type, frozenset[str]] = {}


def evolve(obj: _T, **changes: Any) -> _T:
    """``dataclasses.replace`` for the model's frozen dataclasses, without re-running __init__.

    The explorer builds hundreds of thousands of worlds; the stdlib version introspects the
    fields on every call and is a quarter of a step's cost. Unknown field names still fail.
    """
    cls = type(obj)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(f.name for f in fields(cls))  # type: ignore[arg-type]
    if not names.issuperset(changes):
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(set(changes) - names)}")
    new = object.__new__(cls)
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    new.__dict__.pop("_hash", None)  # the copy's fields differ: its hash is computed afresh
    return new


def _hash_once(cls: type[_T]) -> type[_T]:
    """Give a frozen dataclass a hash computed once per object (same value as the generated one).

    Worlds are dictionary keys of the explorer's index and caches and share most of their
    parts with the world they came from; the generated ``__hash__`` walks the whole nested
    structure on every lookup. The cached value lives in the instance ``__dict__`` under
    ``_hash`` (``evolve`` drops it; pickling leaves it out, since string hashes differ
    between processes). Equality is the generated field-by-field comparison.
    """
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    def __hash__(self: Any) -> int:
        d = self.__dict__
        h = d.get("_hash")
        if h is None:
            h = d["_hash"] = hash(tuple([d[n] for n in names]))
        return h  # type: ignore[no-any-return]

    def __getstate__(self: Any) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    setattr(cls, "__hash__", __hash__)  # noqa: B010 (mypy rejects assigning a method)
    setattr(cls, "__getstate__", __getstate__)  # noqa: B010
    return cls


class MonitorRead(Exception):
    """Something read ``World.observed`` where only the protocol state may be read."""


class _Sealed(tuple[Any, ...]):
    """Stands in for ``World.observed`` while the tables run: any look at it raises.

    The monitor records what the wire showed; the agent and the client cannot see it. Sealing
    it during a step makes that structural: a guard or effect that reads it fails loudly, and
    the protocol part of a step is a function of the protocol state alone (so the explorer may
    reuse it across worlds that differ only in their monitor records).
    """

    def _refuse(self, *_: Any, **__: Any) -> Any:
        raise MonitorRead("World.observed (the spec monitor) is sealed here")

    __iter__ = __len__ = __getitem__ = __contains__ = __bool__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __hash__ = _refuse
    __reversed__ = count = index = __add__ = __mul__ = _refuse

    def __repr__(self) -> str:
        return "<sealed monitor>"


SEALED: tuple[Any, ...] = _Sealed()


class _Symbol(Enum):
    """Enum members are singletons: hash by identity, not (in Python code) by name."""

    __hash__ = object.__hash__


class Phase(_Symbol):
    """Connection lifecycle (digest §3.1)."""

    UNINITIALIZED = "uninitialized"
    INITIALIZED = "initialized"


class Status(_Symbol):
    """Per-session lifecycle in the agent's store (digest §3.2)."""

    UNKNOWN = "unknown"  # no such id in the store
    ACTIVE = "active"  # attached to a connection
    STORED = "stored"  # persisted, not attached (after a restart or a dropped connection)
    CLOSED = "closed"  # session/close freed it; the reference agent keeps it loadable (Q9)
    DELETED = "deleted"  # session/delete; hidden from session/list (soft delete)


class AgentProcess(_Symbol):
    """The agent process itself: one state; connect and restart are internal moves."""

    RUNNING = "running"


class Stage(_Symbol):
    """Stages of one session/new request inside the agent (the gate pipeline)."""

    RECEIVED = "received"
    ADVERTISED = "advertised"  # the agent advertised systemPrompt on this connection
    VALID = "valid"  # passed the -32602 checks (or the field was ignored)
    COMPOSED = "composed"  # terminal: the session's system prompt is built; create it
    REJECTED = "rejected"  # terminal: an error was returned, nothing is created


class Attach(_Symbol):
    """How a session came to be active on its current connection."""

    NEW = "new"
    FORK = "fork"
    LOAD = "load"
    RESUME = "resume"


class Mode(_Symbol):
    """systemPromptMode values the RFD defines (R21: omitted means APPEND)."""

    APPEND = "append"
    OVERRIDE = "override"


class BlockKind(_Symbol):
    """ContentBlock discriminators that matter here (digest §5)."""

    TEXT = "text"
    IMAGE = "image"
    RESOURCE_LINK = "resource_link"


class ClientKind(_Symbol):
    CONFORMING = "conforming"  # obeys R3, R6, R12–R14 and S1–S5
    ADVERSARIAL = "adversarial"  # sends anything; the agent must still answer correctly


class PromptCap(_Symbol):
    """agentCapabilities.sessionCapabilities.systemPrompt (R1, R2)."""

    NONE = "none"  # omitted or null: unsupported
    APPEND = "append"  # {}: supported, append only
    OVERRIDE = "override"  # {"override": {}}: append and override
    # alt-instructions only ({"replace": {}} without "append"): its two capability leaves are
    # independent, and the model's override mode is its "replace" (both substitute the defaults)
    REPLACE = "replace"

    @property
    def modes(self) -> frozenset[str]:
        """The mode values this capability advertises (the model's ``Mode`` values)."""
        return _CAP_MODES[self]


_CAP_MODES: dict[PromptCap, frozenset[str]] = {
    PromptCap.NONE: frozenset(),
    PromptCap.APPEND: frozenset({Mode.APPEND.value}),
    PromptCap.OVERRIDE: frozenset({Mode.APPEND.value, Mode.OVERRIDE.value}),
    PromptCap.REPLACE: frozenset({Mode.OVERRIDE.value}),
}


@dataclass(frozen=True, order=True)
class Caps:
    """One capability profile, as advertised in an initialize result."""

    system_prompt: PromptCap = PromptCap.NONE  # sessionCapabilities.systemPrompt(.override)
    load_session: bool = False  # agentCapabilities.loadSession
    resume: bool = False  # sessionCapabilities.resume
    fork: bool = False  # sessionCapabilities.fork (UNSTABLE in v1)
    close: bool = False  # sessionCapabilities.close
    delete: bool = False  # sessionCapabilities.delete
    list: bool = False  # sessionCapabilities.list
    # initialize's protocolVersion: 1 on every wire but v2's (its own messages say 2). A
    # design whose client detects the feature by version (``[wire] learn``) meets agents at 2,
    # some of which ignore the field (``simulations.engines.bounds.Bound.for_wire``)
    protocol_version: int = 1

    def label(self) -> str:
        parts = [f"systemPrompt={self.system_prompt.value}"]
        parts += [
            name
            for name in ("load_session", "resume", "fork", "close", "delete", "list")
            if getattr(self, name)
        ]
        if self.protocol_version != 1:
            parts.append(f"protocolVersion={self.protocol_version}")
        return "{" + " ".join(parts) + "}"


@dataclass(frozen=True)
class Block:
    """A ContentBlock in a systemPrompt array; ``text`` is a prompt symbol for TEXT blocks."""

    kind: BlockKind
    text: str = ""


@_hash_once
@dataclass(frozen=True)
class Request:
    """One client→agent request (or an environment event) with the parameters the model uses.

    ``mode`` is the raw ``systemPromptMode`` string so unknown values (``"replace"``) can be sent.
    """

    method: str  # trigger name: "session_new", "session_load", …
    conn: int = 0  # index of the connection it travels on
    sid: str | None = None  # sessionId for load/resume/fork/close/delete/prompt
    system_prompt: tuple[Block, ...] | None = None  # session/new systemPrompt (None = omitted)
    mode: str | None = None  # session/new systemPromptMode (None = omitted)
    client: ClientKind = ClientKind.CONFORMING  # for "connect": who is on the new connection
    profile: Caps | None = None  # for "restart": what the agent advertises afterwards


class Reason(Enum):
    """Why an agent answered with an error; the wire carries only ``code`` and ``message``."""

    NOT_INITIALIZED = "not initialized"
    ALREADY_INITIALIZED = "already initialized"
    METHOD_NOT_FOUND = "method not advertised"
    EMPTY_PROMPT = "empty systemPrompt"
    EMPTY_TEXT = "empty instruction text"  # alt-instructions (A7)
    MODE_WITHOUT_PROMPT = "systemPromptMode without systemPrompt"
    UNADVERTISED_MODE = "unadvertised or unknown systemPromptMode"
    UNSUPPORTED_BLOCK = "unsupported content block type"
    CANNOT_INCORPORATE = "cannot incorporate system prompt"
    PROMPT_REQUIRED = "systemPrompt required"
    UNKNOWN_SESSION = "unknown session"
    SESSION_NOT_AVAILABLE = "session not available"
    PROMPT_DIFFERS = "systemPrompt differs from the session's"
    PROMPT_UNSUPPORTED_HERE = "session has a systemPrompt this agent does not advertise"


INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002


@dataclass(frozen=True)
class Reply:
    """The agent's answer to one request: success (``code is None``) or a JSON-RPC error."""

    code: int | None = None
    reason: Reason | None = None
    sid: str | None = None  # sessionId in a new/fork result
    listed: tuple[str, ...] = ()  # session/list result
    replayed: bool = False  # session/load streamed the history before answering (S8)
    slot: Slot | None = None  # session/prompt: what the model's system slot held for the turn
    sent: bool = True  # False: a conforming client declined to send the request
    # a new/load/resume/fork result that carries the session's effective prompt (a proposal's
    # wire change, ``Tables.replies``): the slot the agent says the session now runs under
    # (the wire shows it as the envelope ``{mode, content}``, or null for the agent's default).
    # None: the answer carries no prompt (every published revision)
    echo: Slot | None = None
    # a session/new result's ``systemPromptStatus`` (a proposal's wire change): "accepted",
    # "rejected", or "" where the design has the field and this agent, predating it, sent
    # none (the wire shows nothing; a client of the design reads that as "not applied").
    # None: the design has no such field
    status: str | None = None
    # what the answer tells a conforming client the session runs under from now on, read as
    # the revision's client reads its wire (``model.machines``): its own prompt accepted, an
    # echo, a status, a default the missing capability implies. None: the answer tells
    # nothing (a reopen without a prompt): the client knows only what it knew before (P9)
    told: Slot | None = None
    # an answer that told nothing, where the client can read the session's prompt back on
    # this connection right after (a proposal's read-back method answers it there): P9 is
    # then judged on that read's answer, not on this one
    readable: bool = False

    @property
    def ok(self) -> bool:
        return self.sent and self.code is None

    @property
    def error(self) -> bool:
        return self.sent and self.code is not None


NOT_SENT = Reply(sent=False)


@_hash_once
@dataclass(frozen=True)
class Connection:
    phase: Phase
    client: ClientKind
    caps: Caps | None = None  # the profile advertised in this connection's initialize result


@_hash_once
@dataclass(frozen=True)
class Session:
    """One entry of the agent's durable store plus its live (in-memory) system prompt."""

    sid: str
    status: Status
    conn: int | None = None  # the connection it is active on (ACTIVE only)
    parent: str | None = None  # set iff created by session/fork
    blocks: tuple[str, ...] | None = None  # stored client content (None: no client prompt)
    mode: Mode | None = None  # stored mode (None iff blocks is None)
    live: Slot | None = None  # composed prompt in effect while ACTIVE; None otherwise


@_hash_once
@dataclass(frozen=True)
class Agent:
    profile: Caps  # what it advertises on the next initialize
    store: tuple[Session, ...] = ()  # kept sorted by sid so equal worlds hash equally
    issued: int = 0  # ids handed out so far; the next one is f"s{issued + 1}"
    base: str = BASE  # its built-in prompt

    def session(self, sid: str | None) -> Session | None:
        for s in self.store:
            if s.sid == sid:
                return s
        return None

    def with_session(self, new: Session) -> Agent:
        rest = tuple(s for s in self.store if s.sid != new.sid)
        return evolve(self, store=tuple(sorted((*rest, new), key=sid_key)))


@_hash_once
@dataclass(frozen=True)
class Observed:
    """Spec monitor: what the wire and the system slot showed for one session id.

    History fields are never shrunk: they record how the session came to exist, so gates and
    end-to-end properties are plain predicates over the state.
    """

    sid: str
    parent: str | None  # set iff it came from a successful session/fork
    requested: tuple[Block, ...] | None  # systemPrompt on the creating session/new
    requested_mode: str | None  # systemPromptMode on the creating session/new
    advertised: PromptCap  # systemPrompt capability on the creating connection
    conforming: bool  # created by a conforming client
    created_on: tuple[int, int]  # (restart epoch, connection index) of the creating request
    attach: Attach | None = None  # how it is attached now (None: not active)
    attach_cap: PromptCap = PromptCap.NONE  # systemPrompt capability where it was attached
    # the attachments its turns ran under (new, fork, load, resume) and the slot its first
    # turn saw (P2 compares every later turn with it). What a turn saw is judged on the turn
    # itself (the P step properties), so the record keeps no log of slots: a log would make
    # every order of re-sends and turns a state of its own
    turned: frozenset[Attach] = frozenset()
    first_slot: Slot | None = None
    restored_after_restart: bool = False  # it lived through a restart and was attached again
    survived_restart: bool = False  # a restart happened while it existed
    deleted: bool = False  # a session/delete of it succeeded
    # the slot the agent put in effect when it created the session (new or fork): what this
    # agent made of the creating request, whatever the spec says it should have made
    composed: Slot | None = None
    # a turn-level operation (a compaction turn, the extension method that sets the prompt)
    # changed its live slot since it was attached: the rules about the attachment (R16, R17,
    # R20, T14) judge what the attachment put in effect, not what a later turn rebuilt
    rebuilt: bool = False
    # a turn-level operation replaced its stored prompt (R18's business): a later restore
    # gives back the prompt set, not the one it was created with, so R16 and R17 (for its
    # forks) no longer judge it
    prompt_set: bool = False


@_hash_once
@dataclass(frozen=True)
class World:
    agent: Agent
    connections: tuple[Connection, ...] = ()
    observed: tuple[Observed, ...] = ()  # monitor, sorted by sid
    restarts: int = 0  # how many restarts happened (bounded by the explorer's bounds)

    def obs(self, sid: str | None) -> Observed | None:
        for o in self.observed:
            if o.sid == sid:
                return o
        return None

    def with_obs(self, new: Observed) -> World:
        rest = tuple(o for o in self.observed if o.sid != new.sid)
        return evolve(self, observed=tuple(sorted((*rest, new), key=sid_key)))

    def conn(self, index: int) -> Connection | None:
        return self.connections[index] if 0 <= index < len(self.connections) else None


def sid_key(x: Session | Observed) -> tuple[int, str]:
    """The order of the store and the monitor: s2 before s10."""
    return (len(x.sid), x.sid)


def initial_world(profile: Caps) -> World:
    """An agent that has just started with ``profile``, no connections and an empty store."""
    return World(agent=Agent(profile=profile))


__all__ = [
    "BASE",
    "BIG",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "NOT_SENT",
    "RESOURCE_NOT_FOUND",
    "SEALED",
    "Agent",
    "AgentProcess",
    "Attach",
    "Block",
    "BlockKind",
    "Caps",
    "ClientKind",
    "Connection",
    "Mode",
    "MonitorRead",
    "Observed",
    "Phase",
    "PromptCap",
    "Reason",
    "Reply",
    "Request",
    "Session",
    "Slot",
    "Stage",
    "Status",
    "World",
    "evolve",
    "initial_world",
    "sid_key",
]
