"""Executable model of ACP client-provided system prompts (RFD PR #1237, revision 4969bbbf).

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
