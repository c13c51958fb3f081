"""What ``make test`` runs and what it leaves to ``make exhaustive`` (issue 44, item 4).

``make test`` is meant to finish in about five minutes on 2 cores; ``make exhaustive`` (pytest
marker ``exhaustive``) runs everything else and may run nightly. The rule of the split:

* every **kind** of check stays in ``make test``: each engine and each equivalence between
  engines, each mechanism of the live kit (plan, coverage, follow, sandbox, interrupt, hostile
  agents and clients, validate, the model endpoint), each failure class, each notebook but the
  live one, each documented command marked short, each revision's pinned counts and verdicts;
* a **matrix** (one check over many mutants, knobs, faulty builds or moments) keeps in
  ``make test`` one member per revision and per side (agent, client) — plus, for the mutants,
  the ones whose shrinking is checked — and leaves the rest to ``make exhaustive``. Every
  mutant is still run in ``make test`` by the cheap matrices (``test_validate``,
  ``test_reuse``, ``test_agent``): what moves is its second engine and its live run;
* a **repeat on a bigger case** (the same check on ``default`` after ``small``, a second full
  live plan of an agent whose kind a cheaper test covers) is ``make exhaustive``.

``KEEP`` names, per parametrized test, the parameter ids ``make test`` runs (every other id of
it is marked ``exhaustive`` at collection); ``WHOLE`` names tests that run only under ``make
exhaustive``, each with the reason. Tests that carry ``@pytest.mark.exhaustive`` in their own
module (older moves, each with its reason there) are not repeated here.
``tests/test_suite_split.py`` checks that every id named here exists and that every test
of ``KEEP`` keeps one in ``make test``. Costs behind the choices: ``bench/suite_costs.py``,
numbers in ``bench/RESULTS.md``.
"""

from __future__ import annotations

from test_mutants import SHRUNK
from test_notebooks import NAMES

# parametrized test → the ids ``make test`` runs
KEEP: dict[str, frozenset[str]] = {
    # both engines on a mutant: the shrunk ones (one per revision and kind of id,
    # test_mutants.SHRUNK) and one cheap mutant per revision and side they leave out
    "tests/test_mutants.py::test_hypothesis_and_bfs_catch_mutant_by_its_declared_id": frozenset(
        {
            *SHRUNK,
            "client_sends_mode_alone",
            "v1_load_without_prompt_empties_slot",
            "alt_client_sends_empty_text",
        }
    ),
    # the reference agent built as a mutant, live: one per revision, and a restart's
    "tests/test_conform.py::test_the_reference_agent_built_as_each_agent_side_mutant_fails_its_id": (  # noqa: E501
        frozenset(
            {
                "fork_drops_parent_prompt",
                "restart_loses_store",
                "v1_load_without_prompt_empties_slot",
                "v2_resume_without_prompt_empties_slot",
                "alt_fork_drops_instructions",
            }
        )
    ),
    "tests/test_conform.py::test_each_agent_side_mutant_fails_its_id_through_the_model_endpoint": (
        frozenset(
            {
                "fork_drops_parent_prompt",
                "v1_load_without_prompt_empties_slot",
                "v2_resume_without_prompt_empties_slot",
                "alt_fork_drops_instructions",
            }
        )
    ),
    # a faulty client build per class of fault: garbage on the wire, a rule of what is
    # re-sent, a capability the agent did not advertise, a mode on fork
    "tests/test_client_conform.py::test_each_faulty_client_build_fails_its_id": frozenset(
        {"sends-garbage", "no-resend", "override-unadvertised", "fork-override"}
    ),
    # knobs: one of each kind (capability, placement, store, inheritance, client)
    "tests/test_profiles.py::test_each_knob_alone_breaks_exactly": frozenset(
        {
            "advertises_prompt-none",
            "advertises_methods-none",
            "reads_prompt-nowhere",
            "store_survives_restart-False",
            "fork_inherits-False",
            "on_load-default",
            "size_limit-drop",
            "client_sends_prompt-never",
        }
    ),
    "tests/test_profiles.py::test_each_new_knob_alone_breaks_exactly_on_v1_stable": frozenset(
        {"on_differ-keep", "on_differ-reject", "text_blocks-reject"}
    ),
    "tests/test_profiles.py::test_each_client_knob_alone": frozenset(
        {
            "rfd-final-client_sends_prompt-always",
            "rfd-final-client_sends_prompt-never",
            "rfd-final-client_override-always",
            "v1-stable-client_resends-same",
            "v1-stable-client_resends-none",
        }
    ),
    "tests/test_profiles.py::test_refusing_blank_text_alone_is_an_open_choice_not_a_broken_must": (
        frozenset({"rfd-final"})
    ),
    "tests/test_revisions.py::test_check_evaluates_only_the_ids_its_revision_states": frozenset(
        {"rfd-final-None-small", "v1-stable-v1_load_without_prompt_empties_slot-choices"}
    ),
    "tests/test_fanout.py::test_fan_out_changes_nothing": frozenset(
        {"small-False-None", "small-True-fork_drops_parent_prompt"}
    ),
    # Ctrl-C: before the run, inside a request, between tests, while the report is written
    "tests/test_conform_results.py::test_a_ctrl_c_at_any_moment_exits_130_with_the_report_written": (  # noqa: E501
        frozenset({"before-the-loop", "in-a-request", "between-tests", "while-writing-json"})
    ),
    # a spread search keeping the wrong BFS parent: the cheaper of the two scopes (the fault,
    # and the comparison that catches it, are the same on each)
    "tests/test_cluster.py::test_a_spread_search_keeping_the_wrong_parent_is_caught": frozenset(
        {"choices-1"}
    ),
    # every notebook but the one that runs a live agent (the live kit has its own tests)
    "tests/test_notebooks.py::test_notebook_runs": frozenset(
        name for name in NAMES if name != "07_check_a_live_agent.ipynb"
    ),
}

# test → why only ``make exhaustive`` runs it
WHOLE: dict[str, str] = {
    "tests/test_client_conform.py::test_the_conforming_scripted_client_conforms": (
        "the scripted client's full plan (36 scenarios, 152 steps, 35 restarts); make test runs "
        "it on the plan's first scenarios "
        "(test_the_conforming_scripted_client_conforms_on_the_plan_s_first_scenarios) and each "
        "faulty build on the scenario that convicts it (test_client_plan_cover, "
        "test_each_faulty_client_build_fails_its_id)"
    ),
    "tests/test_world.py::test_an_omitted_prompt_on_reopen_is_lost_there_by_t15": (
        "a second faulty pairing of the end-to-end matrix (a client and an agent process per "
        "step); make test has the faulty meta-prompt pairing lost with its rule "
        "(test_a_prompt_the_client_writes_in_meta_is_lost_at_the_first_turn) and the rule of "
        "each loss from the same logic (test_why_names_the_rule)"
    ),
    "tests/test_world.py::test_an_override_that_keeps_the_agents_instructions_is_reached_otherwise": (  # noqa: E501
        "a third faulty pairing of the end-to-end matrix; make test judges the same slot "
        "reading (T13 on the agent's instructions alone) through conform (test_slot_context) "
        "and the rule from the same logic (test_why_names_the_rule)"
    ),
    "tests/test_cluster.py::test_population_on_choices_is_the_same_json_on_local_2": (
        "the identical JSON of a search and a local:2 cluster through the task-per-scope path "
        "again, on the population's two searches (the costliest cluster test: a local run and "
        "a cluster's); make test compares that path on small "
        "(test_a_bound_of_several_scopes_is_a_task_per_scope_with_the_same_json) and the "
        "spread one on one scope (test_one_scope_of_small_spread_out_is_the_same_json)"
    ),
    "tests/test_examples.py::test_the_example_agent_conforms_with_every_situation_of_the_plan_run": (  # noqa: E501
        "an SDK agent's full tiny plan (about 170 processes at half a second of SDK import "
        "each); make test runs the SDK faulty agent on one path (test_follow) and the "
        "reference agent's full tiny plan with its coverage (test_coverage)"
    ),
    "tests/test_faulty_agents.py::test_a_fault_the_tiny_bound_reaches_fails[last-prompt-global]": (
        "a second SDK agent's full tiny plan; make test has the plan catching faults through "
        "the reference agent built as mutants and faulty builds (test_conform)"
    ),
    "tests/test_profiles.py::test_causes_of_p8_on_the_real_engine_name_both_knobs": (
        "the causes of a violation two knobs each cause, again on the exploring engine; "
        "test_a_violation_two_knobs_each_cause_names_both checks it on the cheaper one"
    ),
    "tests/test_bounds.py::test_the_default_bound_shows_a_prompt_replaced_on_reopen_and_a_mode_lost_on_restart": (  # noqa: E501
        "the default bound's repeat of what test_population shows on choices"
    ),
    "tests/test_reuse.py::test_reuse_changes_nothing_for_the_reference_at_default": (
        "the reuse equivalence on default after small and under mutants"
    ),
}
