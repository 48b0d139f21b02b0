"""The pytest plugin, run by pytest's own ``pytester`` on a small user project."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import wm_kernel.testing.plugin as plugin

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

USER_TESTS = """
import pytest
from wm_kernel.testing.assertions import assert_section_present

GUIDANCE = "Slow down."


def test_guidance_prompt(wm_session, prompt_snapshot):
    wm_session.trinket("PeanutGalleryTrinket").add_guidance("concern", GUIDANCE, ttl=2)
    wm_session.compose()
    wm_session.advance_turn(3)
    assert_section_present(wm_session, "peanutgallery_guidance", turns=(0, 2))
    prompt_snapshot(wm_session)


@pytest.mark.wm_session(base_prompt="You help {first_name} plan trips.", clock="2027-01-05T10:00:00+00:00")
def test_marker(wm_session, prompt_snapshot):
    wm_session.compose()
    assert wm_session.composed.cached_content.startswith("You help Ada plan trips.")
    prompt_snapshot(wm_session.composed)
"""


def _installed() -> bool:
    """The plugin is registered through the package's ``pytest11`` entry point (an install)."""
    from importlib.metadata import entry_points

    return any(e.value == "wm_kernel.testing.plugin" for e in entry_points(group="pytest11"))


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # installed, pytest loads it by its entry point, as a user's project does; naming it again with
    # -p would register it twice
    load = () if _installed() else ("-p", "wm_kernel.testing.plugin")
    return pytester.runpytest(*load, "-p", "no:cacheprovider", *args)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_prompts=USER_TESTS)
    return pytester


@pytest.mark.slow  # a pytest run inside the test
def test_a_first_run_without_golden_files_fails_and_says_how_to_write_them(project: pytest.Pytester) -> None:
    result = run(project)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*AssertionError: no golden file *test_guidance_prompt.json: run pytest --wm-update to write it"]
    )
    assert "raise AssertionError" not in result.stdout.str()  # the message, not the helper's source


@pytest.mark.slow  # a pytest run inside the test
def test_wm_update_writes_the_golden_files_and_then_the_suite_passes(project: pytest.Pytester) -> None:
    result = run(project, "--wm-update")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*wm-kernel prompt snapshots*", "written: *test_guidance_prompt.json", "written: *test_marker.json"]
    )
    golden = project.path / "__prompt_snapshots__" / "test_prompts" / "test_guidance_prompt.json"
    data = json.loads(golden.read_text(encoding="utf-8"))
    assert [t["turn"] for t in data["turns"]] == [0, 1, 2, 3]
    guidance = [s for s in data["turns"][0]["sections"] if s["name"] == "peanutgallery_guidance"]
    assert guidance[0]["placement"] == "notification"
    assert any("Slow down." in line for line in guidance[0]["lines"])
    run(project).assert_outcomes(passed=2)


@pytest.mark.slow  # a pytest run inside the test
def test_a_seeded_regression_is_exactly_one_clear_failure_and_wm_update_accepts_it(project: pytest.Pytester) -> None:
    run(project, "--wm-update").assert_outcomes(passed=2)
    project.makepyfile(test_prompts=USER_TESTS.replace('GUIDANCE = "Slow down."', 'GUIDANCE = "Slow down, please."'))
    result = run(project)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: prompt snapshot test_guidance_prompt.json: turn 0, section "
            "'peanutgallery_guidance' (notification) differs:",
            "*--- golden",
            "*+++ composed",
            "*-*Slow down.*",
            "*+*Slow down, please.*",
            "*(and 2 more differences)",
            "*(run pytest --wm-update to accept the new prompt)",
        ]
    )
    # the failure points at the test's own line, and shows none of the helper's source
    shown = result.stdout.str()
    assert "prompt_snapshot(wm_session)" in shown
    assert "raise AssertionError" not in shown and "snapshot.py" not in shown
    run(project, "--wm-update").assert_outcomes(passed=2)
    run(project).assert_outcomes(passed=2)


@pytest.mark.slow  # a pytest run inside the test
def test_the_assertion_helpers_fail_with_a_message_naming_section_and_turns(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_helpers="""
from wm_kernel.testing.assertions import assert_section_present

def test_expiry(wm_session):
    wm_session.trinket("PeanutGalleryTrinket").add_guidance("concern", "Slow down.", ttl=2)
    wm_session.compose()
    wm_session.advance_turn(3)
    assert_section_present(wm_session, "peanutgallery_guidance", turns=(0, 3))
"""
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: section 'peanutgallery_guidance' is missing from turn 3 "
            "(checked turns 0..3; sections at turn 3: base_prompt, conversation_manifest, "
            "datetime_section)"
        ]
    )


def test_the_package_declares_the_plugin_as_a_pytest11_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {"wm_kernel": "wm_kernel.testing.plugin"}


@pytest.mark.slow
def test_the_plugin_changes_nothing_in_a_run_that_does_not_ask_for_it() -> None:
    """Loaded in every run of an environment with wm-kernel (this project's own too): no autouse
    fixture, no hook but its option, marker and summary, and nothing heavy imported."""
    hooks = sorted(name for name in vars(plugin) if name.startswith("pytest_"))
    assert hooks == ["pytest_addoption", "pytest_configure", "pytest_terminal_summary"]
    fixtures = {
        name: getattr(vars(plugin)[name], "_fixture_function_marker", None)
        for name in ("wm_session", "prompt_snapshot")
    }
    assert all(marker is not None and marker.autouse is False for marker in fixtures.values())
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, wm_kernel.testing.plugin; "
            "print(sorted(m for m in ('pandas', 'wm_kernel.session', 'trinkets', "
            "'wm_kernel.core.working_memory') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert loaded.stdout.strip() == "[]"


PARAMETRIZED = """
import pytest

@pytest.mark.parametrize("label", ["a/b", "a_b", "a b", "a:b"])
def test_label(wm_session, prompt_snapshot, label):
    wm_session.compose(base_prompt="Label " + label)
    prompt_snapshot(wm_session.composed)
"""


def test_separator_bearing_test_ids_name_distinct_golden_files() -> None:
    from wm_kernel.testing.snapshot import golden_name

    names = [golden_name(f"test_label[{label}]") for label in ("a/b", "a_b", "a b", "a:b", "a%2Fb")]
    assert len(set(names)) == 5, names
    assert golden_name("test_guidance_prompt") == "test_guidance_prompt"  # golden files written before
    assert all("/" not in n and ":" not in n and " " not in n for n in names)
    assert len(golden_name("test_x[" + "y" * 1000 + "]").encode()) <= 200


@pytest.mark.slow  # a pytest run inside the test
def test_four_parametrized_ids_keep_four_golden_files(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_labels=PARAMETRIZED)
    run(pytester, "--wm-update").assert_outcomes(passed=4)
    folder = pytester.path / "__prompt_snapshots__" / "test_labels"
    assert len(list(folder.iterdir())) == 4
    run(pytester).assert_outcomes(passed=4)
