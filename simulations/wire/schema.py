"""The schema check of ACP messages: the vendored official schemas, read and applied per wire.

Scope
    ``validate_transcript`` checks JSON-RPC messages (a transcript ``simulations.wire.acp``
    wrote, a live agent's wire, a recorded log) against the official ACP schemas, vendored in
    ``simulations/wire/schemas``, on one revision's wire (``acp.WIRES``); ``method_schemas``,
    ``load_schema`` and ``schema_registry`` give the schemas themselves (the method each
    ``$defs`` pair serves, one file parsed, a ``referencing`` registry of them). How a model
    request looks as a message is ``simulations.wire.acp``'s; this module only judges shapes.

Abstractions
    Base fields are checked against the stable v1 schema; it has no session/fork, so fork
    messages are checked against the unstable schema's ForkSessionRequest/Response; a
    ``session/update`` notification against ``SessionNotification`` (v2:
    ``UpdateSessionNotification``) in the ``AgentNotification`` envelope. The RFD
    fields are checked per wire, and refused on methods the wire does not put them on
    (``acp.PROMPT_METHODS``): for "blocks" and "string" against shapes written here (no
    official schema has them), for "envelope" against the official ``SystemPrompt`` and
    ``SessionSystemPromptCapabilities``; the envelope-v2 wire is checked against the 2026-11 v2
    schema alone. A proposal's answer fields (``acp.echo_fields``, ``acp.status_field``) and
    its read-back method (``READ_METHOD``) are in no schema: their shapes are written here.
    Extension (``_``-prefixed) methods are checked as JSON-RPC 2.0 with the wire's RFD fields.
    All are shape checks: an adversarial client's empty array or ``"replace"`` mode is still a
    well-formed message. ``jsonschema`` and ``referencing`` are imported only when a message is
    checked or a registry built.

    The schemas are package data, vendored byte for byte in ``simulations/wire/schemas`` and
    read only through ``importlib.resources`` (``vendored_schemas``); the folder's
    ``VENDORED.md`` gives each file's upstream source, licence and sha256. Each has a URI here
    (``SCHEMA_FILES``): the two v1 files, the 2026-11 v1 file the envelope wire reads, the
    2026-11 v2 file, which the envelope-v2 wire (v2-draft) validates against alone, and our own
    file for the alternative RFD's fields. ``validate_transcript``, ``method_schemas`` and
    ``load_schema`` take an optional directory laid out the same way instead (a test's altered
    copies).

Source
    ACP schema v1: agentclientprotocol/agent-client-protocol ``main`` at b7f0005 (2026-08-22),
    ``schema/v1/schema.json`` and ``schema/v1/schema.unstable.json``; the RFD's
    SessionCapabilities / NewSessionRequest additions (the RFD docs/rfds/client-system-prompt.mdx
    at revision 4969bbbf, "Schema changes"); the 2026-11 envelope (npm @agentclientprotocol/sdk
    2.4.0, ``schema/v1/schema.unstable.json``, ``$defs/SystemPrompt``, and
    ``schema/v2/schema.unstable.json``); the alternative RFD's ``sessionInstructions``
    (docs/rfds/session-system-prompt.mdx at 8c977541; our own file, ``VENDORED.md``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from model.tables import READ_METHOD
from simulations.engines.trace import wire_method
from simulations.wire.acp import (
    ECHO_WIRES,
    PROMPT_METHODS,
    RFD_FIELDS,
    V2_WIRE,
    capability_key,
    check_wire,
)

if TYPE_CHECKING:  # jsonschema is imported where a message is validated: an agent never does
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

# the shape ``status_field`` writes (no official schema has the field)
_STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["status"],
    "additionalProperties": False,
    "properties": {"status": {"enum": ["accepted", "rejected"]}, "reason": {"type": "string"}},
}


_STABLE, _UNSTABLE = "urn:acp:schema:v1", "urn:acp:schema:v1-unstable"
_SDK = "urn:acp:schema:sdk-2.4.0:v1-unstable"  # the 2026-11 schema: the envelope's official defs
_SDK_V2 = "urn:acp:schema:sdk-2.4.0:v2-unstable"  # the 2026-11 v2 schema: the envelope-v2 wire
_ALT = "urn:acp:schema:alt-session-instructions"  # ours, from the alternative RFD's text
# URI → file, relative to the vendored folder (or to an override directory laid out like it).
_FILES = {
    _STABLE: "acp-schema-v1.json",
    _UNSTABLE: "acp-schema-v1.unstable.json",
    _SDK: "sdk-2.4.0/acp-schema-v1.unstable.json",
    _SDK_V2: "sdk-2.4.0/acp-schema-v2.unstable.json",
    _ALT: "alt-session-instructions.json",
}
SCHEMA_FILES: Mapping[str, str] = MappingProxyType(_FILES)
# The schemas a wire reads beyond the two v1 files.
_WIRE_SCHEMAS: dict[str, tuple[str, ...]] = {
    "envelope": (_SDK,),
    V2_WIRE: (_SDK_V2,),
    "instructions": (_ALT,),
}


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# A field the wire does not have. (Not the schema ``false``: jsonschema reports no path for it.)
_ABSENT: dict[str, Any] = {"not": {}}
# The RFD fields' schemas per wire. "blocks" and "string" are ours to write (no official schema
# has them): shape only. "envelope" is the official 2026-11 definition.
_FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "blocks": {
        "systemPrompt": {"type": "array", "items": {"$ref": f"{_STABLE}#/$defs/ContentBlock"}},
        "systemPromptMode": {"type": "string"},
    },
    "string": {"systemPrompt": {"type": "string"}},
    "envelope": {"systemPrompt": {"$ref": f"{_SDK}#/$defs/SystemPrompt"}},
    V2_WIRE: {"systemPrompt": {"$ref": f"{_SDK_V2}#/$defs/SystemPrompt"}},
    # no official schema has it: our own file, written from the alternative RFD's text
    "instructions": {"sessionInstructions": {"$ref": f"{_ALT}#/$defs/SessionInstructions"}},
}
_CAPABILITY_SCHEMAS: dict[str, Any] = {
    "blocks": {
        "type": ["object", "null"],
        "properties": {"override": {"type": ["object", "null"]}},
    },
    "string": _ABSENT,  # the string revisions have no capability: it must not appear
    "envelope": {"$ref": f"{_SDK}#/$defs/SessionSystemPromptCapabilities"},
    V2_WIRE: {"$ref": f"{_SDK_V2}#/$defs/SessionSystemPromptCapabilities"},
    "instructions": {"$ref": f"{_ALT}#/$defs/SessionInstructionsCapabilities"},
}


def _rfd_params(method: str, wire: str) -> dict[str, Any]:
    """The RFD fields ``method``'s params may carry on ``wire``; every other one is refused."""
    carriers = {wire_method(m) for m in PROMPT_METHODS[wire]}
    allowed = _FIELD_SCHEMAS[wire] if method in carriers else {}
    return _object(**{name: allowed.get(name, _ABSENT) for name in RFD_FIELDS})


def _rfd_initialize_result(wire: str) -> dict[str, Any]:
    if wire == V2_WIRE:
        capability = _CAPABILITY_SCHEMAS[wire]
        return _object(capabilities=_object(session=_object(systemPrompt=capability)))
    capabilities = {key: _ABSENT for key in ("systemPrompt", "sessionInstructions")}
    capabilities[capability_key(wire)] = _CAPABILITY_SCHEMAS[wire]
    return _object(agentCapabilities=_object(sessionCapabilities=_object(**capabilities)))


@dataclass(frozen=True)
class MethodSchema:
    """Where a method's params and result are defined: schema URI and the two ``$defs`` names."""

    uri: str
    request: str
    response: str

    @property
    def file(self) -> str:
        return _FILES[self.uri]


def vendored_schemas() -> Traversable:
    """The vendored schema folder: ``simulations/wire/schemas``, package data (see VENDORED.md)."""
    return files("simulations.wire") / "schemas"


def _resource(directory: str | None, uri: str) -> dict[str, Any]:
    """The schema ``uri`` names: vendored, or read from ``directory`` when one is given."""
    parts = _FILES[uri].split("/")
    if directory is None:
        source: Traversable = vendored_schemas()
        for part in parts:
            source = source / part
        text = source.read_text(encoding="utf-8")
    else:
        text = Path(directory, *parts).read_text(encoding="utf-8")
    contents: dict[str, Any] = json.loads(text)
    return contents


def _dir(directory: Path | str | None) -> str | None:
    return None if directory is None else str(directory)


def load_schema(uri: str, spec_dir: Path | None = None) -> dict[str, Any]:
    """The parsed schema ``uri`` names (a key of ``SCHEMA_FILES``), freshly read."""
    if uri not in _FILES:
        raise KeyError(f"no schema has the URI {uri!r}; known: {', '.join(_FILES)}")
    return _resource(_dir(spec_dir), uri)


def schema_registry(*uris: str, spec_dir: Path | None = None) -> Registry[Any]:
    """A ``referencing`` registry holding the schemas ``uris`` name (all of them if none)."""
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry()
    for uri in uris or tuple(_FILES):
        registry = registry.with_resource(uri, Resource.from_contents(load_schema(uri, spec_dir)))
    return registry


@lru_cache(maxsize=8)
def _load(directory: str | None) -> tuple[Registry[Any], dict[str, MethodSchema]]:
    from referencing import Registry, Resource

    registry: Registry[Any] = Registry()
    methods: dict[str, MethodSchema] = {}
    for uri in (_STABLE, _UNSTABLE):  # stable first: the unstable file only fills gaps
        contents = _resource(directory, uri)
        registry = registry.with_resource(uri, Resource.from_contents(contents))
        found: dict[str, dict[str, str]] = {}
        for name, d in contents["$defs"].items():
            if d.get("x-side") != "agent" or "x-method" not in d:
                continue
            for kind in ("Request", "Response"):
                if name.endswith(kind):
                    found.setdefault(d["x-method"], {})[kind] = name
        for method, defs in found.items():
            if method not in methods and {"Request", "Response"} <= defs.keys():
                methods[method] = MethodSchema(uri, defs["Request"], defs["Response"])
    return registry, methods


@lru_cache(maxsize=8)
def _load_v2(directory: str | None) -> dict[str, MethodSchema]:
    """method → ``$defs`` in the 2026-11 v2 schema (the envelope-v2 wire reads only this)."""
    methods: dict[str, dict[str, str]] = {}
    for name, d in _resource(directory, _SDK_V2)["$defs"].items():
        if d.get("x-side") == "agent" and "x-method" in d:
            for kind in ("Request", "Response"):
                if name.endswith(kind):
                    methods.setdefault(d["x-method"], {})[kind] = name
    return {
        m: MethodSchema(_SDK_V2, defs["Request"], defs["Response"])
        for m, defs in methods.items()
        if {"Request", "Response"} <= defs.keys()
    }


@lru_cache(maxsize=8)
def _notifications(directory: str | None, wire: str) -> dict[str, tuple[str, str]]:
    """Agent→client notification method → (URI, ``$defs`` name of its params): the v2 file
    on the v2 wire, else the v1 files (stable first)."""
    found: dict[str, tuple[str, str]] = {}
    for uri in (_SDK_V2,) if wire == V2_WIRE else (_STABLE, _UNSTABLE):
        for name, d in _resource(directory, uri)["$defs"].items():
            if d.get("x-side") == "client" and name.endswith("Notification"):
                method = d.get("x-method")
                if isinstance(method, str):
                    found.setdefault(method, (uri, name))
    return found


@lru_cache(maxsize=32)
def _notification_validator(directory: str | None, method: str, wire: str) -> Any:
    uri, name = _notifications(directory, wire)[method]
    base = _SDK_V2 if wire == V2_WIRE else _STABLE
    schema = {
        "allOf": [{"$ref": f"{base}#/$defs/AgentNotification"}],
        "type": "object",
        "required": ["jsonrpc", "method", "params"],
        "additionalProperties": False,
        "properties": {
            "jsonrpc": {"const": "2.0"},
            "method": {"const": method},
            "params": {"$ref": f"{uri}#/$defs/{name}"},
        },
    }
    return _draft_2020_12(schema, directory, wire)


def _methods(directory: str | None, wire: str) -> dict[str, MethodSchema]:
    return _load_v2(directory) if wire == V2_WIRE else _load(directory)[1]


@lru_cache(maxsize=8)
def _registry(directory: str | None, wire: str) -> Registry[Any]:
    """The two v1 schemas, plus those the wire reads (the 2026-11 one for the envelope)."""
    from referencing import Resource

    registry = _load(directory)[0]
    for uri in _WIRE_SCHEMAS.get(wire, ()):
        registry = registry.with_resource(uri, Resource.from_contents(_resource(directory, uri)))
    return registry


def method_schemas(directory: Path | None = None) -> dict[str, MethodSchema]:
    """method → the ``$defs`` its params and result are validated against (read from x-method).

    The schemas are the vendored ones unless ``directory`` (laid out like them) is given.
    """
    return dict(_load(_dir(directory))[1])


def _envelope(base: str, kind: str, uri: str = _STABLE, **properties: Any) -> dict[str, Any]:
    """A JSON-RPC message: ``base``'s envelope, exactly these members, jsonrpc "2.0"."""
    members = {"jsonrpc": {"const": "2.0"}, "id": {}, **properties}
    return {
        "allOf": [{"$ref": f"{uri}#/$defs/{base}"}],
        "type": "object",
        "required": ["jsonrpc", "id", *(["method", "params"] if kind == "request" else [])],
        "additionalProperties": False,
        "properties": members,
    }


def _echo_result(wire: str) -> dict[str, Any]:
    """A result's echo of the session's prompt (``echo_fields``): null, or the wire's own
    shape of a prompt (the official ``SystemPrompt`` on the envelope wires)."""
    null = {"type": "null"}
    if wire == "blocks":
        blocks = _FIELD_SCHEMAS["blocks"]["systemPrompt"]
        return _object(systemPrompt={"oneOf": [blocks, null]}, systemPromptMode={"type": "string"})
    return _object(systemPrompt={"oneOf": [_FIELD_SCHEMAS[wire]["systemPrompt"], null]})


@lru_cache(maxsize=128)
def _validator(
    directory: str | None,
    method: str,
    kind: str,
    wire: str,
    echo: bool = False,
    status: bool = False,
) -> Any:
    ms = _methods(directory, wire)[method]
    base = _SDK_V2 if wire == V2_WIRE else _STABLE  # the JSON-RPC envelopes: v2's own on v2
    if kind == "request":
        params = {"allOf": [{"$ref": f"{ms.uri}#/$defs/{ms.request}"}, _rfd_params(method, wire)]}
        schema = _envelope("ClientRequest", kind, base, method={"const": method}, params=params)
    else:
        result: dict[str, Any] = {"allOf": [{"$ref": f"{ms.uri}#/$defs/{ms.response}"}]}
        if method == "initialize":
            result["allOf"].append(_rfd_initialize_result(wire))
        if echo:  # a proposal puts the session's prompt in this answer: its shape is checked
            result["allOf"].append(_echo_result(wire))
        if status:  # a proposal's systemPromptStatus: its shape is checked (ours)
            result["allOf"].append(_object(systemPromptStatus=_STATUS_SCHEMA))
        schema = _envelope("AgentResponse", kind, base, result=result, error={})
    return _draft_2020_12(schema, directory, wire)


@lru_cache(maxsize=8)
def _read_validator(directory: str | None, kind: str, wire: str) -> Any:
    """The read-back method a proposal adds (``READ_METHOD``): no schema has it, so its shape is
    ours: params ``{sessionId}`` (the schema's ``SessionId``; ``_meta`` free), the result
    ``{systemPrompt}``, the wire's own prompt shape or null (``_echo_result``)."""
    base = _SDK_V2 if wire == V2_WIRE else _STABLE
    if kind == "request":
        params = {
            "type": "object",
            "required": ["sessionId"],
            "additionalProperties": False,
            "properties": {"sessionId": {"$ref": f"{base}#/$defs/SessionId"}, "_meta": {}},
        }
        members = {"method": {"const": READ_METHOD}, "params": params}
        required = ["jsonrpc", "id", "method", "params"]
    else:
        echo = _echo_result(wire)
        result = {
            "allOf": [echo],
            "type": "object",
            "required": ["systemPrompt"],
            "additionalProperties": False,
            "properties": {**{k: {} for k in echo["properties"]}, "_meta": {}},
        }
        error = {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        }
        members = {"result": result, "error": error}
        required = ["jsonrpc", "id"]
    schema: dict[str, Any] = {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": {"jsonrpc": {"const": "2.0"}, "id": {}, **members},
    }
    if kind != "request":
        schema["oneOf"] = [{"required": ["result"]}, {"required": ["error"]}]
    return _draft_2020_12(schema, directory, wire)


@lru_cache(maxsize=32)
def _ext_validator(directory: str | None, method: str, kind: str, wire: str) -> Any:
    """An extension (``_``-prefixed) method: no schema defines it (ACP leaves its params and
    result free-form), so a message is checked as JSON-RPC 2.0 (a request with object params,
    a response with an object result or an error) and the RFD fields it carries as ``wire``
    defines them."""
    if kind == "request":
        params = {"allOf": [{"type": "object"}, _rfd_params(method, wire)]}
        members = {"method": {"const": method}, "params": params}
        required = ["jsonrpc", "id", "method", "params"]
        one_of: list[Any] = []
    else:
        error = {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        }
        members = {"result": {"type": "object"}, "error": error}
        required = ["jsonrpc", "id"]
        one_of = [{"required": ["result"]}, {"required": ["error"]}]
    schema: dict[str, Any] = {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": {"jsonrpc": {"const": "2.0"}, "id": {}, **members},
    }
    if one_of:
        schema["oneOf"] = one_of
    return _draft_2020_12(schema, directory, wire)


def _draft_2020_12(schema: dict[str, Any], directory: str | None, wire: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema, registry=_registry(directory, wire))


def _problem(i: int, method: str, kind: str, wire: str, error: ValidationError) -> str:
    from jsonschema.exceptions import best_match

    e = best_match([error])
    where = "/" + "/".join(str(p) for p in e.absolute_path)
    absent = e.validator == "not" and e.validator_value == {}
    message = f"the {wire} wire has no such field" if absent else e.message
    return f"message {i} ({method} {kind}) at {where}: {message}"


def validate_transcript(
    messages: Iterable[Mapping[str, Any]],
    spec_dir: Path | None = None,
    *,
    wire: str = "blocks",
    echo: Collection[str] = (),
    status: Collection[str] = (),
) -> list[str]:
    """Problems found checking each message against the ACP v1 schema (empty: all valid).

    A request is checked against the ClientRequest envelope and its method's params ``$def``;
    a response against the AgentResponse envelope (result or error) and the result ``$def`` of
    the method its id answers. The RFD fields are checked as ``wire`` defines them: where they
    may appear (anywhere else they are refused), the params' field shapes and the initialize
    result's ``sessionCapabilities.systemPrompt`` — shape only for "blocks" and "string", the
    2026-11 schema's ``SystemPrompt`` and ``SessionSystemPromptCapabilities`` for "envelope".
    An agent→client notification (``session/update``) is checked against the
    AgentNotification envelope and its params ``$def``.
    The schemas are the vendored ones unless ``spec_dir`` (laid out like them) is given.
    ``echo`` names the methods (ACP names) whose results a proposal makes carry the session's
    prompt, ``status`` those that carry ``systemPromptStatus`` (``reply_methods``): there the
    field's shape is checked too. A proposal's read-back (``READ_METHOD``), in no schema, is
    checked against its own shape: params ``{sessionId}``, result ``{systemPrompt}`` as the
    wire's echo has it (the 2026-11 ``SystemPrompt`` or null on the envelope wires).
    """
    check_wire(wire)
    directory = _dir(spec_dir)
    methods = _methods(directory, wire)
    notifications = _notifications(directory, wire)
    pending: dict[Any, str] = {}
    problems: list[str] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, Mapping):
            problems.append(f"message {i}: not a JSON object")
            continue
        if "method" in msg and "id" not in msg and msg["method"] in notifications:
            method = msg["method"]
            validator = _notification_validator(directory, method, wire)
            for error in validator.iter_errors(dict(msg)):
                problems.append(_problem(i, method, "notification", wire, error))
            continue
        if "method" in msg:
            method, kind = msg["method"], "request"
            if "id" in msg:
                pending[msg["id"]] = method
        else:
            kind = "response"
            method = pending.pop(msg.get("id"), None)
            if method is None:
                problems.append(f"message {i}: response id {msg.get('id')!r} answers no request")
                continue
        if method == READ_METHOD and wire in ECHO_WIRES:  # a proposal's read-back: ours
            for error in _read_validator(directory, kind, wire).iter_errors(dict(msg)):
                problems.append(_problem(i, method, kind, wire, error))
            continue
        if isinstance(method, str) and method.startswith("_"):  # an extension method
            for error in _ext_validator(directory, method, kind, wire).iter_errors(dict(msg)):
                problems.append(_problem(i, method, kind, wire, error))
            continue
        if not isinstance(method, str) or method not in methods:
            where = (
                "is not in the ACP v2 schema" if wire == V2_WIRE else "is in neither ACP v1 schema"
            )
            problems.append(f"message {i}: method {method!r} {where}")
            continue
        response = kind == "response"
        validator = _validator(
            directory,
            method,
            kind,
            wire,
            response and method in echo,
            response and method in status,
        )
        for error in validator.iter_errors(dict(msg)):
            problems.append(_problem(i, method, kind, wire, error))
    for mid, method in pending.items():
        problems.append(f"request id {mid!r} ({method}) has no response")
    return problems
