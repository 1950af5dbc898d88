"""Which test modules need helm, a browser, or are slow: the markers `make unit` leaves out (tests/conftest.py).

Measured with `pytest -n 2 --durations=0` on main (2026-12-06, a loaded 2-core machine): a module whose tests
took 3 s or more in all is slow, and so is a single test listed by its node id; needs_helm runs `helm template`
(a render, the lock, a chart check) or fetches charts. Every test still runs in `make test`; the markers only
choose what `make unit` leaves out.
"""

from __future__ import annotations

BROWSER = ("tests/pages/test_pages.py", "tests/pages/test_pages_layout.py")

RENDER_FIXTURES = frozenset({"renders", "prod_build"})
"""Fixtures that render a stack (tests/support/renders.py, simulate.py): a test using one needs helm, in any module."""

NEEDS_HELM = (
    "tests/components/test_jupyterhub.py",
    "tests/assembly/test_logs_and_spend.py",
    "tests/assembly/test_one_ledger.py",
    "tests/test_bad_input_corpus.py",
    "tests/cli/test_cli.py",
    "tests/test_fetch_upstream.py",
    "tests/infra/test_gates_checkov.py",
    "tests/test_library_wheel.py",
    "tests/infra/test_lifecycle_day2.py",
    "tests/infra/test_lifecycle_first_up.py",
    "tests/test_lock_edit.py::test_a_maxnodes_edit_checks_only_the_changed_key_and_passes_the_lock_check",
    "tests/test_no_skips.py",
    "tests/infra/test_render.py",
    "tests/infra/test_render_lock.py",
    "tests/infra/test_render_replay.py",
    "tests/test_upstream_lookup.py",
    "tests/infra/test_verify_charts.py",
    "tests/cli/test_write_guard.py",
    # a prod render with patched checks (replays off)
    "tests/cli/test_first_contact.py::test_the_render_refuses_a_cost_tag_in_the_first_up_and_a_kind_without_a_contract",
    "tests/test_wheel_flow.py",
)

SLOW = (
    # single tests of otherwise fast modules (a node id prefix)
    # (make unit's own --durations, 2026-12-06: 5 s or more under a load of 12-15)
    "tests/infra/test_deploy_policy.py::test_every_recorded_type_has_an_entry_and_every_action_exists",
    "tests/infra/test_deploy_policy.py::test_cli_prints_the_documents_and_writes_only_out",
    # the module's `recorded` fixture runs `ekstrain diff`'s recorder on three stacks, each in a subprocess (12 s of
    # CPU): every test that reads it
    "tests/infra/test_deploy_policy.py::test_replay_every_recorded_resource_against_the_policy",
    "tests/infra/test_deploy_policy.py::test_a_policy_missing_an_action_is_caught_by_the_replay",
    "tests/infra/test_deploy_policy.py::test_the_policy_is_scoped_lint_clean_and_fits_managed_policies",
    "tests/infra/test_deploy_policy.py::test_defect_the_old_role_list_lacked_logs_sns_budgets_ce_and_amp",
    "tests/infra/test_deploy_policy.py::test_docs_table_equals_the_generated_one",
    "tests/infra/test_deploy_policy.py::test_read_only_is_reads_only",
    # every source left out in turn: 21 refits of every constant (validation.leave_one_source_out, 7-8 s of CPU)
    "tests/planner/test_leave_one_source_out.py::test_never_fitted_sources_exist_and_are_predicted_with_the_shipped",
    "tests/planner/test_leave_one_source_out.py::test_every_row_of_every_source_is_predicted_once",
    "tests/planner/test_leave_one_source_out.py::test_coverage_is_measured_against_bands_that_exclude_the_source",
    "tests/planner/test_leave_one_source_out.py::test_table1_left_out_lands_within_25_percent",
    # a fresh interpreter that imports the program (python -m ekstrain, every component in turn)
    "tests/components/test_component_imports.py",
    "tests/cli/test_cli_inputs.py::test_real_process_prints_one_line_without_traceback",
    "tests/planner/test_leave_one_source_out.py::test_deepspeed_left_out_takes_the_physical_prior_not_fsdp_overlap",
    "tests/assembly/test_jobs_volcano_queue.py::test_the_render_records_the_operators_gang_flags",
    "tests/cli/test_first_contact.py::test_a_later_up_with_the_flag_activates_the_tags_and_passes_its_contract",
    "tests/cli/test_first_contact.py::test_no_cost_allocation_tag_in_the_first_up",
    "tests/simulate/test_simulate_deploy.py::test_cli_plays_the_contracts_on_a_seeded_build",
    "tests/infra/test_privilege.py",
    "tests/pages/test_architecture_svg.py",
    "tests/pages/test_pages_drawn.py",
    "tests/planner/test_search_floor.py",
    "tests/assembly/test_jobs_templates.py::test_hugepages_are_requested_only_when_asked",
    "tests/assembly/test_jobs_bionemo.py::test_validates_against_the_volcano_crd",
    "tests/planner/test_practitioner_layouts.py::test_cp_pruning_keeps_the_top_ten",
    "tests/test_names_corpus.py::test_names_and_free_text_corpus",
    "tests/test_supply_chain_io.py::test_simulate_on_a_damaged_build_says_so_in_one_line",
    "tests/test_health_loops.py",
    "tests/planner/test_fms_fsdp.py::test_leave_one_source_out_figures_as_measured",
    "tests/planner/test_interleaved_405b.py::test_the_search_tries_interleaving_and_the_balanced_split_for_405b",
    "tests/planner/test_properties.py::test_search_degrees_multiply_to_the_fleet",
    "tests/planner/test_interleaved_405b.py::test_metas_layouts_land_within_15_percent_when_metas_source_is_left_out",
    "tests/infra/test_verify_iam.py::test_every_policy_document_of_every_stack_lints_clean",
    "tests/planner/test_bad_input.py",
    "tests/planner/test_bands.py",
    "tests/assembly/test_alerts.py",
    "tests/components/test_argocd.py",
    "tests/simulate/test_capacity_example.py",
    "tests/cli/test_cli_room.py",
    "tests/components/test_compute_mixed.py",
    "tests/components/test_compute_specs.py",
    "tests/components/test_compute_stacks.py",
    "tests/diff/test_diff.py",
    "tests/assembly/test_elastic_slurm.py",
    "tests/components/test_existing_vpc.py",
    "tests/planner/test_framework_true_plans.py",
    "tests/stacks/test_fuzz_stack.py",
    "tests/stacks/test_fuzz_stack_limits.py",
    "tests/infra/test_gates_policy.py",
    "tests/test_imports.py",
    "tests/assembly/test_jobs_examples.py",
    "tests/assembly/test_jobs_shell_fuzz.py",
    "tests/infra/test_lifecycle_teardown.py",
    "tests/components/test_network.py",
    "tests/assembly/test_observability.py",
    "tests/test_real_eks.py",
    "tests/test_plain_clone.py",
    "tests/infra/test_relations.py",
    "tests/assembly/test_schedulers_operators.py",
    "tests/assembly/test_schedulers_slurm.py",
    "tests/assembly/test_schedulers_toggles.py",
    "tests/simulate/test_simulate.py",
    "tests/simulate/test_simulate_contention.py",
    "tests/simulate/test_simulate_inputs.py",
    "tests/simulate/test_simulate_timeline.py",
    "tests/stacks/test_stack_instance_types.py",
    "tests/stacks/test_stack_login_keys.py",
    "tests/stacks/test_stack_secrets.py",
    "tests/components/test_storage_components.py",
    "tests/test_storage_config.py",
    "tests/test_subnets.py",
    "tests/cli/test_subprocess_values.py",
    "tests/simulate/test_teams.py",
    "tests/test_validation.py",
    "tests/infra/test_verify_aws_rules.py",
    "tests/infra/test_verify_emitted.py",
    "tests/infra/test_verify_protected.py",
    "tests/infra/test_verify_requests.py",
    "tests/infra/test_verify_sdk_schema.py",
    "tests/test_yaml_corpus.py",
)
