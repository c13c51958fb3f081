"""Executable model of the client-provided system prompt of the Agent Client Protocol (ACP).

It covers every revision of the feature (``model.revisions.REVISIONS``): ACP v1 as stabilised
on 2026-11-06 (``v1-stable``: ``systemPrompt {mode, content}`` on new, load, resume and fork),
the ACP v2 draft (``v2-draft``), the RFD of PR #1237 at its final revision 4969bbbf
(``rfd-final``) and its string-valued designs (``rfd-should``: the text as opened on 2026-05-18;
``rfd-draft``: the text of 2026-05-21, cb74b20, rebased as 0b902f18; ``pr-1494``), and the
alternative "Session-Scoped Instructions" RFD that was not adopted (``alt-instructions``).

The public API: the requirement registry, the world state, the tables and the engine that runs
them, the checks and witnesses every engine shares, and the mutants.
"""

from model.invariants import CHECKS, NOT_CHECKED, STATE_CHECKS, STEP_CHECKS, Check
from model.machines import Compiled, Step, System
from model.mutants import MUTANTS, Mutant
from model.revisions import REVISIONS, Revision
from model.spec import REQUIREMENTS, Requirement, requirement
from model.tables import REFERENCE, Row, Tables
from model.types import Caps, PromptCap, Request, World, initial_world
from model.witnesses import WITNESSES

__all__ = [
    "CHECKS",
    "MUTANTS",
    "NOT_CHECKED",
    "REFERENCE",
    "REQUIREMENTS",
    "REVISIONS",
    "STATE_CHECKS",
    "STEP_CHECKS",
    "WITNESSES",
    "Caps",
    "Check",
    "Compiled",
    "Mutant",
    "PromptCap",
    "Request",
    "Requirement",
    "Revision",
    "Row",
    "Step",
    "System",
    "Tables",
    "World",
    "initial_world",
    "requirement",
]
