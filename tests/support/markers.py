"""Which test modules need helm, a browser, or are slow: the markers `make unit` leaves out (tests/conftest.py).

Measured with `pytest -n 2 --durations=0` on main (2026-12-06, a loaded 2-core machine): a module whose tests
took 3 s or more in all is slow, and so is a single test listed by its node id; needs_helm runs `helm template`
(a render, the lock, a chart check) or fetches charts. Every test still runs in `make test`; the markers only
choose what `make unit` leaves out.
"""

from __future__ import annotations

BROWSER = ("tests/test_pages.py",)

RENDER_FIXTURES = frozenset({"renders", "prod_build"})
"""Fixtures that render a stack (tests/support/renders.py, simulate.py): a test using one needs helm, in any module."""

NEEDS_HELM = (
    "tests/test_jupyterhub.py",
    "tests/test_logs_and_spend.py",
    "tests/test_one_ledger.py",
    "tests/test_bad_input_corpus.py",
    "tests/test_cli.py",
    "tests/test_fetch_upstream.py",
    "tests/test_gates_checkov.py",
    "tests/test_library_wheel.py",
    "tests/test_lifecycle_day2.py",
    "tests/test_lifecycle_first_up.py",
    "tests/test_no_skips.py",
    "tests/test_render.py",
    "tests/test_render_lock.py",
    "tests/test_render_replay.py",
    "tests/test_upstream_lookup.py",
    "tests/test_verify_charts.py",
    "tests/test_write_guard.py",
)

SLOW = (
    # single tests of otherwise fast modules (a node id prefix)
    "tests/planner/test_fms_fsdp.py::test_leave_one_source_out_figures_as_measured",
    "tests/planner/test_interleaved_405b.py::test_the_search_tries_interleaving_and_the_balanced_split_for_405b",
    "tests/planner/test_properties.py::test_search_degrees_multiply_to_the_fleet",
    "tests/planner/test_interleaved_405b.py::test_metas_layouts_land_within_15_percent_when_metas_source_is_left_out",
    "tests/test_verify_iam.py::test_every_policy_document_of_every_stack_lints_clean",
    "tests/planner/test_bad_input.py",
    "tests/planner/test_bands.py",
    "tests/test_alerts.py",
    "tests/test_argocd.py",
    "tests/test_capacity_example.py",
    "tests/test_cli_room.py",
    "tests/test_compute_mixed.py",
    "tests/test_compute_specs.py",
    "tests/test_compute_stacks.py",
    "tests/test_diff.py",
    "tests/test_elastic_slurm.py",
    "tests/test_existing_vpc.py",
    "tests/test_framework_true_plans.py",
    "tests/test_fuzz_stack.py",
    "tests/test_fuzz_stack_limits.py",
    "tests/test_gates_policy.py",
    "tests/test_imports.py",
    "tests/test_jobs_examples.py",
    "tests/test_jobs_shell_fuzz.py",
    "tests/test_lifecycle_teardown.py",
    "tests/test_network.py",
    "tests/test_observability.py",
    "tests/test_real_eks.py",
    "tests/test_relations.py",
    "tests/test_schedulers_operators.py",
    "tests/test_schedulers_slurm.py",
    "tests/test_schedulers_toggles.py",
    "tests/test_simulate.py",
    "tests/test_simulate_contention.py",
    "tests/test_simulate_inputs.py",
    "tests/test_simulate_timeline.py",
    "tests/test_stack_instance_types.py",
    "tests/test_stack_login_keys.py",
    "tests/test_stack_secrets.py",
    "tests/test_storage_components.py",
    "tests/test_storage_config.py",
    "tests/test_subnets.py",
    "tests/test_subprocess_values.py",
    "tests/test_teams.py",
    "tests/test_validation.py",
    "tests/test_verify_aws_rules.py",
    "tests/test_verify_emitted.py",
    "tests/test_verify_protected.py",
    "tests/test_verify_requests.py",
    "tests/test_verify_sdk_schema.py",
    "tests/test_yaml_corpus.py",
)
