"""Validate's follower: the model's world kept in step with the log, followed where the log
departs from the model, and the faults a later answer shows.

Scope
    ``Follower`` is the part of a ``Stream`` (``simulations.live.validate.stream``) that
    holds the model beside the log: the model's world, its connections for the log's, the
    map between the log's session ids and the model's, and the moves that got there. The
    stream's ``Reader`` asks it for a client request in the model's terms (``request``),
    hands it each answered client request (``settle``: the model's step, memoised with its
    checks, ``_step``, judged by the checks) and each piece of slot evidence
    (``slot_evidence``), and tells it of a new agent process (``restarted``); what it finds
    it reports to the stream's ``Judge`` (``simulations.live.validate.model``). Where the
    log departs from the model (the agent created a session the model says fails, or
    refused what the model accepts), validation follows the LOG: the step is re-run as the
    agent must have taken it (``_diverged``: the model's rejecting rows removed until it
    succeeds, ``_succeeding``; an error leaves the world as it was; a listed or replayed
    value, or a recorded system slot, put into the reply or the session's live prompt,
    ``_compare`` and ``_slot``), the checks judge that step, and the model goes on
    from it. A departure no check judges (the spec allows several answers, and the model's
    reference agent took another) is a note, not a finding; a load or resume served where no
    edit of the tables serves it is still held to S8 on the wire alone (``_replay_kept``).

Abstractions
    One agent process per log (per kit transcript). Connections appear as the log names them:
    each is a model ``connect`` of a conforming client, so a request a conforming client must
    not send (the CLIENT table's gates: R3, S2–S5, T2–T5, ...) is judged by the client checks
    (the model runs the request on a client table with every gate open, and the checks see a
    conforming client send it), whatever the agent answered: a request the model cannot
    follow is still the client's (S1 for a session/new served before initialize). An
    ``initialize`` the agent answers with success on a connection already initialised is a
    new agent process (our transcripts show a restart so): the model restarts with the
    capabilities the new answer advertises (``_initialize``). The capability profile is
    read from each initialize result. Session ids are the log's; the model's own (s1, s2,
    ...) are mapped to them as sessions are created (``_map_ids``).

    Some faults leave nothing on the wire where they happen; a later answer shows them, and
    validation infers them from it:

    - an error answer that nevertheless changed the store (R15 on session/new, P6 for any
      request): when a later answer departs from the model (a session listed that no success
      created, a session treated as detached), the errored answers kept (the last 16, within
      the last 64 model moves, none across a restart) are tried, latest first (``_explained``):
      the errored step's success path (``_effect``: the model's rows that refused it dropped;
      where that leaves no row, the trigger's session rows without their guards; where
      neither serves it, the request as an agent that ignored the mode, then the prompt, it
      could not take), then the moves since, re-run (``_rerun``); if they answer as the log
      did and the departing answer is now the model's, the errored step is judged with that
      effect — its ids at its answer's line (T9 for a prompt it could not use; T11 for an
      empty content array, which no check of the model judges) — and validation goes on from
      the explained world (a listed id no success created becomes the session the effect
      created);
    - a restart that lost stored prompts (R18; A18 on alt-instructions): a restart shows as an
      initialize answered on an initialised connection, or a new process. The first attach
      after it of a session stored with a prompt whose result shows the slot the session would
      have if the store had lost that prompt is reported R18 at that answer, naming the
      restart's line, besides the restore id (R16) it breaks anyway: the wire cannot tell the
      two apart (``_after_restart``; the attach is read as from a store that lost the prompt
      by ``simulations.live.oracle.judge.shown_forgotten``, the function conform reads its
      restores with).

    What the wire cannot show is not judged: the system slot is on the wire only in our
    transcripts' ``_meta.systemSlot`` (the model's observation) of a session/prompt result
    (the slot of that turn) and of a session/new, load, resume or fork result (the slot the
    session runs under from then on; where it differs from the model's, the step is judged
    with it, and a later turn that departs is judged alone), and in the introspection
    extension's answers and conform's records of a model call (``slot_evidence``).

Source
    The model's tables and machines (``model.tables``, ``model.machines``: an edit of the
    tables is a build that answers otherwise), its checks (``model.invariants``), the monitor
    (``model.monitor.observe``) and the slot a step attaches (``simulations.engines.observe``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from model.invariants import STATE_CHECKS, STEP_CHECKS
from model.machines import ModelError, Step, System
from model.monitor import observe
from model.revisions import Revision
from model.spec import REQUIREMENTS
from model.tables import Tables
from model.types import (
    Caps,
    ClientKind,
    Phase,
    Reply,
    Request,
    World,
    evolve,
    initial_world,
)
from simulations.engines.observe import attached_slot, prompt_lost
from simulations.live.oracle.judge import shown_forgotten
from simulations.live.validate.model import (
    _ATTACH_METHODS,
    _ERRORED_KEPT,
    _STEPS_KEPT,
    _UNFIT,
    Judge,
    _attached_sid,
    _created,
    _engine,
    _Errored,
    _Memo,
    _Moved,
    _Observed,
    _Pending,
    _with_live,
    _with_slot,
    caps_of,
)
from simulations.live.validate.model import REPLAY as _REPLAY
from simulations.live.validate.read import _UNKNOWN_CODE

_EMPTY_REFUSED = "T11"  # an empty content array refused: then nothing is created or attached


class Follower:
    """The model's world kept in step with one stream's log: each answered client request
    settled against the model's step (``settle``), the step re-run as the agent took it where
    the log departs, and the hidden effects of earlier answers inferred from later ones. What
    it finds goes to the stream's ``Judge``."""

    def __init__(self, revision: Revision, judge: Judge, memo: _Memo):
        self.rev = revision
        self.wire = revision.wire
        self.judge = judge
        self.tables, self.system = _engine(revision.name)
        self.memo = memo
        self.world = initial_world(Caps())
        self.conns: dict[object, int] = {}  # the log's connection → the model's index
        self.sids: dict[str, str] = {}  # the log's session id → the model's
        self.back: dict[str, str] = {}  # the model's session id → the log's
        self.attached: dict[str, Step] = {}  # model sid → the step that last attached it
        self.shown: set[str] = set()  # model sids whose attaching result showed the slot
        # later evidence of earlier hidden effects (bounded): errored answers, recent moves
        self.moves = 0
        self.errored: deque[_Errored] = deque(maxlen=_ERRORED_KEPT)
        self.moved: deque[_Moved] = deque(maxlen=_STEPS_KEPT)
        # a restart seen (initialize answered on an initialised connection): its line, and the
        # model's sessions stored then that no attach has shown since
        self.restart_line = self._answer_line = 0
        self.unattached: set[str] = set()

    # ---- what the reader asks

    def request(self, req: Request, conn: object) -> Request:
        """``req`` as the log sent it on its connection ``conn``, in the model's terms: the
        model's connection (opened at its first request) and session id."""
        sid = None if req.sid is None else self.sids.get(req.sid, f"?{req.sid}")
        return evolve(req, conn=self._conn(conn), sid=sid)

    def settle(
        self, p: _Pending, got: _Observed, line: int, msg: dict[str, Any], conn: object
    ) -> None:
        """The answer ``msg`` at ``line`` (``got``: what it shows, in the model's terms) to the
        client request ``p``, sent on the log's connection ``conn``: the model's step beside
        it is judged (followed where the log departs), and the model goes on from it."""
        req = p.request
        assert req is not None
        if req.method == "initialize" and got.code is None:
            self._answer_line = line
            self._initialize(req, msg)
            req = evolve(req, conn=self.conns.get(conn, req.conn))
        step, bad = self._step(self.world, req)
        if self.errored and _departs(step, got, self.sids) and self._explained(p, got, line):
            req = p.request
            assert req is not None
            step, bad = self._step(self.world, req)
        reply = step.reply
        if (reply.code is None) != (got.code is None):
            step, judged = self._diverged(step, got, p, line)
            # unjudged, the step still shows what the client sent: its rules hold or not
            # whatever the agent answered (S1: a session/new served before initialize)
            bad = (
                self._checks(step)
                if judged
                else tuple(r for r in bad if r in self.judge.client_ids)
            )
        elif got.code is not None:
            if got.code not in (reply.code, _UNKNOWN_CODE):
                self.judge.note(
                    line, f"{p.method}: error {got.code}, the model answers {reply.code}"
                )
                step = Step(step.before, req, evolve(reply, code=got.code), step.after, step.rows)
                bad = self._checks(step)
        else:
            step, bad = self._compare(step, bad, got, p, line)
        self.judge.broken(bad, p, line)
        if self.unattached:
            self._after_restart(step, got, p, line)
        if got.code is not None:
            self.errored.append(_Errored(self.moves, line, p, step))
        created = got.sid if req.method in ("session_new", "session_fork") else None
        self._moved(req, p.log_sid, got.code, created)
        self.world = step.after
        self._map_ids(step, got, line)
        self.memo.trim()

    def slot_evidence(self, p: _Pending, log_sid: object, result: Mapping[str, Any]) -> None:
        """Slot evidence at ``p.line``: the introspection extension's answer, or conform's
        record of a turn's model call (both ``{systemSlot}``): the session runs under that
        slot now. Where the result that attached the session did not show its slot, that step
        is judged again with it (as a turn's ``_meta.systemSlot`` is); the session's live
        prompt follows the evidence either way."""
        raw = result.get("systemSlot")
        sid = self.sids.get(log_sid) if isinstance(log_sid, str) else None
        if sid is None or not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            return
        session = self.world.agent.session(sid)
        slot = tuple(raw)
        if session is None or session.live == slot:
            return
        self.judge.note(
            p.line, f"{p.method}: system slot {list(slot)}, the model has {session.live}"
        )
        attach = self.attached.get(sid)
        if attach is not None and sid not in self.shown:
            again = _with_slot(attach, sid, slot)
            self.judge.broken(self._checks(again), p, p.line)
            self.attached[sid] = again
        self.world = _with_live(self.world, sid, slot)
        self.shown.add(sid)

    # ---- the model

    def _checks(self, step: Step) -> tuple[str, ...]:
        bad = [c.rid for c in STEP_CHECKS if not c.fn(step)]
        bad += [c.rid for c in STATE_CHECKS if not c.fn(step.after)]
        return tuple(dict.fromkeys(r for r in bad if self.rev.states(r)))

    def _step(self, world: World, req: Request) -> tuple[Step, tuple[str, ...]]:
        key = (self.rev.name, world, req)
        hit = self.memo.steps.get(key)
        if hit is None:
            step = self.system.step(world, req)
            hit = (step, self._checks(step))
            self.memo.steps[key] = hit
        return hit

    def _conn(self, name: object) -> int:
        index = self.conns.get(name)
        if index is None:
            req = Request("connect", client=ClientKind.CONFORMING)
            self.world = self.system.step(self.world, req).after
            index = self.conns[name] = len(self.world.connections) - 1
            self._moved(req)
        return index

    def _moved(
        self,
        req: Request,
        log_sid: str | None = None,
        code: int | None = None,
        created: str | None = None,
    ) -> None:
        """Count a model move; keep it only while an errored answer may need it re-run."""
        index = self.moves
        self.moves += 1
        if not self.errored:
            if self.moved:
                self.moved.clear()
            return
        self.moved.append(_Moved(index, req, log_sid, code, created))
        while self.errored and self.moved[0].at > self.errored[0].index + 1:
            self.errored.popleft()  # the moves after it are no longer all kept

    def _initialize(self, req: Request, msg: dict[str, Any]) -> None:
        result = msg.get("result")
        caps = caps_of(result if isinstance(result, Mapping) else {}, self.wire)
        conn = self.world.conn(req.conn)
        if conn is not None and conn.phase is Phase.INITIALIZED:
            # answered with success on an initialised connection: a new agent process
            name = next(k for k, v in self.conns.items() if v == req.conn)
            self.restarted(Request("restart", profile=caps), self._answer_line)
            self._conn(name)
        elif self.world.agent.profile != caps:
            self.world = evolve(self.world, agent=evolve(self.world.agent, profile=caps))
            self.errored.clear()

    def restarted(self, restart: Request, line: int) -> None:
        """The model's world after the agent process restarted at ``line``: no connection of the
        log is open (the next request opens its own), hidden effects are not looked for across
        it, and the sessions it stored wait for their first attach (R18)."""
        self.world = self.system.step(self.world, restart).after
        self.conns.clear()
        self.errored.clear()
        self.attached.clear()
        self.shown.clear()
        self.restart_line = line
        self.unattached = {s.sid for s in self.world.agent.store if s.blocks is not None}

    def _map_ids(self, step: Step, got: _Observed, line: int) -> None:
        req = step.request
        if req.method in ("session_new", "session_fork") and step.reply.ok:
            model_sid = _created(step)
            if got.sid is not None and model_sid is not None:
                self.sids[got.sid] = model_sid
                self.back[model_sid] = got.sid
                self.attached[model_sid] = step
                self._shown(model_sid, got)
        elif req.method in ("session_load", "session_resume") and step.reply.ok and req.sid:
            self.attached[req.sid] = step
            self._shown(req.sid, got)

    def _shown(self, sid: str, got: _Observed) -> None:
        if got.slot is not None:
            self.shown.add(sid)
        else:
            self.shown.discard(sid)

    # ---- later evidence of what an earlier answer hid

    def _explained(self, p: _Pending, got: _Observed, line: int) -> bool:
        """The answer departs from the model: is it what an earlier errored answer's hidden
        effect explains? For each kept errored answer (latest first) whose success path
        changes the store (``_effect``), the moves since are re-run from the world that
        effect leaves; if they answer as the log did and the departing request now gets what
        the log shows, that answer is judged with the effect (its ids at its line: R15 for a
        session/new, P6 in general) and validation goes on from the explained world."""
        for cand in reversed(self.errored):
            effect = self._effect(cand.step)
            if effect is None:
                continue
            rerun = self._rerun(effect.after, cand.index, p, got)
            if rerun is None:
                continue
            world, sids = rerun
            self.judge.note(
                cand.line,
                f"{cand.pending.method}: the agent answered error {cand.step.reply.code} yet "
                f"changed its store as a success would (shown by the answer at line {line})",
            )
            self.judge.broken(
                (*self._checks(effect), *self._refusal_ids(effect)), cand.pending, cand.line
            )
            self.world, self.sids = world, sids
            self.back = {v: k for k, v in sids.items()}
            self.errored.clear()
            assert p.request is not None
            sid = None if p.log_sid is None else sids.get(p.log_sid, f"?{p.log_sid}")
            p.request = evolve(p.request, sid=sid) if p.log_sid is not None else p.request
            return True
        return False

    def _effect(self, step: Step) -> Step | None:
        """``step`` (answered with an error) as the agent took it, if its success path changes
        the store: the reply stays the error, the world is what success would leave. The
        request is tried as sent, then (a gate with no success row) on the trigger's rows
        without guards, then as an agent that ignored what it could not take (``_readings``:
        the mode, then the whole prompt), as ``_diverged`` reads a success the model does not
        give: an unknown mode is served by no row. The step judged keeps the request as sent,
        so the checks see the mode it could not use refused with a session made anyway (T9)."""
        before, req = step.before, step.request
        tried = self._succeeding(before, req)
        if tried is None:  # a gate with no success row: the trigger's rows without guards
            tried = self._succeeding(before, req, _unguarded(self.tables, req.method))
        if tried is None:
            read = (self._succeeding(before, r) for r in _readings(req) if r != req)
            tried = next((t for t in read if t is not None), None)
        if tried is None or tried.after.agent.store == before.agent.store:
            return None
        after = observe(before, req, step.reply, evolve(tried.after, observed=before.observed))
        return Step(before, req, step.reply, after, tried.rows)

    def _refusal_ids(self, effect: Step) -> tuple[str, ...]:
        """The ids an errored step that changed the store breaks that no check of the model
        judges: T11, where it carried an empty content array. The spec leaves the agent free
        to refuse one or take it (a MAY, so ``model.invariants`` has no check of it), but a
        refusal is one "in which case no session is created, loaded, resumed or forked": an
        error that stored a session anyway took neither option."""
        if effect.request.system_prompt == () and self.rev.states(_EMPTY_REFUSED):
            return (_EMPTY_REFUSED,)
        return ()

    def _rerun(
        self, world: World, since: int, p: _Pending, got: _Observed
    ) -> tuple[World, dict[str, str]] | None:
        """The moves after ``since`` re-run from ``world``, then ``p``'s request: the world and
        the id map if each answers as the log did (None: the log departs from this one too)."""
        sids = dict(self.sids)
        try:
            for m in self.moved:
                if m.at <= since:
                    continue
                step = self.system.step(world, _as_now(m.request, m.log_sid, sids))
                if not _answers(step, m.code):
                    return None
                created = _created(step) if step.reply.ok else None
                if m.created is not None and created is not None:
                    sids[m.created] = created
                world = step.after
            assert p.request is not None
            step = self.system.step(world, _as_now(p.request, p.log_sid, sids))
        except _UNFIT:
            return None
        if not _answers(step, got.code):
            return None
        if got.listed is not None:  # ids the log lists and never saw created: the effect's
            back = set(sids.values())
            unseen = [s for s in got.listed if s not in sids]
            free = [s for s in step.reply.listed if s not in back]
            if len(unseen) != len(free):
                return None
            sids.update(zip(unseen, free, strict=True))
            if sorted(sids[s] for s in got.listed) != sorted(step.reply.listed):
                return None
        return world, sids

    def _after_restart(self, step: Step, got: _Observed, p: _Pending, line: int) -> None:
        """The first attach of a session stored at the restart: where its result shows the
        slot the session would have had if the store had lost its prompt at the restart (the
        one reading of that both live tools share, ``shown_forgotten``), report R18 (A18 on
        alt-instructions) with the restart's line; the wire cannot tell that from a load that
        ignored the stored prompt (R16, judged as before)."""
        sid = step.request.sid
        if step.request.method not in _ATTACH_METHODS or sid not in self.unattached:
            return
        if not step.reply.ok:
            return
        self.unattached.discard(sid)
        before = step.before
        try:  # the model's own answer (``step`` may carry the slot the log showed)
            model = attached_slot(self.system.step(before, step.request))
        except _UNFIT:
            return
        if got.slot is None or model is None or got.slot == model:
            return
        try:  # conform's reading of the same answer (``judge.shown_forgotten``)
            forgot = shown_forgotten(self.tables, step, got.slot)
        except _UNFIT:
            return
        if forgot is None:
            return
        restart = Step(before, Request("restart"), Reply(), prompt_lost(before, sid))
        ids = [r for r in self._checks(restart) if r in ("R18", "A18")]
        for rid in ids:
            self.judge.report(
                rid,
                line,
                f"{p.method} (line {p.line}): the session comes back without the prompt it "
                f"was stored with, as if the restart at line {self.restart_line} lost it: "
                f"{REQUIREMENTS[rid].text} (the wire cannot tell a store that lost the prompt "
                "from a load that ignored it, R16)",
            )

    # ---- an answer the model does not give, followed

    def _diverged(self, step: Step, got: _Observed, p: _Pending, line: int) -> tuple[Step, bool]:
        """The step as the agent took it, where it answered error for ok or ok for error, and
        whether the checks can judge it (not where no edit of the tables takes it)."""
        req, before = step.request, step.before
        if got.code is not None:  # the model succeeds, the agent refused: nothing changed
            reply = Reply(code=got.code)
            self.judge.note(
                line, f"{p.method}: the agent answered error {got.code}, the model succeeds"
            )
            return Step(before, req, reply, observe(before, req, reply, before), step.rows), True
        for reading in _readings(req):
            tried = self._succeeding(before, reading)
            if tried is None:
                continue
            read = "" if reading == req else " (read as ignoring the systemPrompt it cannot take)"
            self.judge.note(
                line,
                f"{p.method}: the agent succeeded where the model answers error "
                f"{step.reply.code}{self._rows_cite(step)}{read}",
            )
            as_sent = Step(before, req, tried.reply, tried.after, tried.rows)
            return self._compare(as_sent, (), got, p, line)[0], True
        self.judge.note(
            line, f"{p.method}: the agent succeeded; the model has no way to (kept as is)"
        )
        self._replay_kept(p, got, line)
        return Step(before, req, Reply(sid=step.reply.sid), before, step.rows), False

    def _rows_cite(self, step: Step) -> str:
        ids = sorted(
            {r for n, i in step.rows for r in self.tables.table(n)[i].reqs if self.rev.states(r)}
        )
        return f" (the model's rows cite {', '.join(ids)})" if ids else ""

    def _replay_kept(self, p: _Pending, got: _Observed, line: int) -> None:
        """S8 on a load or resume the agent served where no edit of the model's tables does (a
        deleted session, say): judged on the wire alone, as ``conform`` does — history before
        a resume's answer, or none before a load's where the log saw the session's updates."""
        evidence = self.judge.replay_evidence(p, line)
        if p.method == "session/resume" and got.replayed:
            self.judge.report(
                _REPLAY,
                line,
                f"{p.method} (line {p.line}): history replayed before its answer",
                evidence,
            )
        elif p.method == "session/load" and got.replayed is False:
            self.judge.report(
                _REPLAY,
                line,
                f"{p.method} (line {p.line}): no history replayed before its answer, where the "
                "log shows the session's updates",
                evidence,
            )

    def _succeeding(self, before: World, req: Request, tables: Tables | None = None) -> Step | None:
        """The model's step on ``req`` with the rows that refused it dropped, one after the
        other, until it succeeds (None: no edit of the tables takes it)."""
        tables = self.tables if tables is None else tables
        for _ in range(5):
            try:
                tried = System(tables).step(before, req)
            except _UNFIT:  # without those rows the tables cannot take this request
                return None
            if tried.reply.ok:
                return tried
            tables = _without_rows(tables, _error_rows(tried, tables))
        return None

    def _compare(
        self, step: Step, bad: tuple[str, ...], got: _Observed, p: _Pending, line: int
    ) -> tuple[Step, tuple[str, ...]]:
        """Both succeeded: put what the log shows into the reply (and the live prompt)."""
        reply, changes, altered = step.reply, dict[str, Any](), False
        if got.sid is not None and got.sid in self.sids:  # an id handed out before
            changes["sid"] = self.sids[got.sid]
        if got.listed is not None:
            listed = tuple(self.sids.get(s, f"?{s}") for s in got.listed)
            if sorted(listed) != sorted(reply.listed):
                self.judge.note(line, f"{p.method}: the agent lists {list(got.listed)}")
                changes["listed"] = listed
        if got.replayed is not None and got.replayed != reply.replayed:
            changes["replayed"] = got.replayed
        attached = _attached_sid(step)
        if got.slot is not None and attached is not None:
            live = attached_slot(step)
            if got.slot != live:  # the session runs under what the result shows
                self.judge.note(
                    line, f"{p.method}: system slot {list(got.slot)}, the model has {live}"
                )
                step, altered = _with_slot(step, attached, got.slot), True
        elif got.slot is not None and got.slot != reply.slot and step.request.sid is not None:
            return self._slot(step, got.slot, p, line)
        if not changes and not altered:
            return step, bad
        followed = Step(step.before, step.request, evolve(reply, **changes), step.after, step.rows)
        return followed, self._checks(followed)

    def _slot(
        self, step: Step, slot: tuple[str, ...], p: _Pending, line: int
    ) -> tuple[Step, tuple[str, ...]]:
        """The turn ran under ``slot``. Where the result that attached the session showed the
        slot it ran under, the turn alone departed: judge it with that slot. Otherwise the
        session's live prompt was ``slot`` since the step that attached it: judge that step
        again with it, then the turn."""
        sid = step.request.sid
        assert sid is not None
        self.judge.note(
            line, f"{p.method}: system slot {list(slot)}, the model has {step.reply.slot}"
        )
        if sid in self.shown:
            req, reply = step.request, evolve(step.reply, slot=slot)
            unseen = evolve(step.after, observed=step.before.observed)
            after = observe(step.before, req, reply, unseen)
            turn = Step(step.before, req, reply, after, step.rows)
            return turn, self._checks(turn)
        bad: list[str] = []
        attach = self.attached.get(sid)
        if attach is not None and sid not in self.shown:  # its result did not show the slot
            again = Step(
                attach.before, attach.request, attach.reply, _with_live(attach.after, sid, slot)
            )
            bad += self._checks(again)
        before = _with_live(step.before, sid, slot)
        try:
            turn = self.system.step(before, step.request)
        except ModelError:
            return step, tuple(bad)
        bad += self._checks(turn)
        return turn, tuple(dict.fromkeys(bad))


def _without_rows(tables: Tables, refs: Iterable[tuple[str, int]]) -> Tables:
    drop: dict[str, set[int]] = {}
    for name, i in refs:
        drop.setdefault(name, set()).add(i)
    for name, idx in drop.items():
        rows = tables.table(name)
        tables = tables.edit(name, tuple(r for i, r in enumerate(rows) if i not in idx))
    return tables


def _error_rows(step: Step, tables: Tables) -> list[tuple[str, int]]:
    """The fired rows whose effect answered with an error (the last one decides)."""
    refs = [(n, i) for n, i in step.rows if n != "client"]
    return refs[-1:] if refs else []


def _unguarded(tables: Tables, trigger: str) -> Tables:
    """``tables`` whose session rows for ``trigger`` have no guards (what the agent did
    anyway, where a guard left no row that succeeds)."""
    rows = tables.session
    return tables.edit(
        "session", tuple(r._replace(guards=()) if r.trigger == trigger else r for r in rows)
    )


def _answers(step: Step, code: int | None) -> bool:
    """The model's reply is what the log answered: success, or an error of that code."""
    if code is None:
        return step.reply.ok
    return step.reply.error and code in (step.reply.code, _UNKNOWN_CODE)


def _departs(step: Step, got: _Observed, sids: Mapping[str, str]) -> bool:
    """The log's answer is not the model's: error for success or the other way, another
    error code, or a list with ids the model does not list."""
    if not _answers(step, got.code):
        return True
    if got.listed is None:
        return False
    return sorted(sids.get(s, f"?{s}") for s in got.listed) != sorted(step.reply.listed)


def _as_now(req: Request, log_sid: str | None, sids: Mapping[str, str]) -> Request:
    """``req`` with the model's id for the log's ``log_sid`` under ``sids``."""
    if log_sid is None:
        return req
    return evolve(req, sid=sids.get(log_sid, f"?{log_sid}"))


def _readings(req: Request) -> Iterator[Request]:
    """``req`` as sent, then as an agent that ignored what it could not take: the mode (an
    unknown or unadvertised one), then the whole systemPrompt."""
    yield req
    if req.mode is not None:
        yield evolve(req, mode=None)
    if req.system_prompt is not None or req.mode is not None:
        yield evolve(req, system_prompt=None, mode=None)
