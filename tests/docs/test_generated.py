"""The generated reference pages (docs/reference/cli.md from the argparse parser, docs/reference/settings.md from
``Settings``) are what ``scripts/gen_docs.py`` writes now: a new option, a changed help or default, a new setting
fails here until ``python scripts/gen_docs.py`` is rerun."""

import dataclasses
import importlib.util

import pytest

from tests.docs.pages import REPO


@pytest.fixture(scope="module")
def gen():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_pages_are_what_the_generator_writes(gen):
    assert gen.stale_pages() == [], "out of date: run python scripts/gen_docs.py and commit docs/reference/"


def test_the_pages_hold_every_command_option_and_setting(gen):
    from mrtpo_viz.cli import COMMANDS, build_parser
    from mrtpo_viz.settings import ENV_VARS, Settings

    cli, settings = gen.cli_page(), gen.settings_page()
    for name in COMMANDS:
        assert f"## `{name}`" in cli
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices
    for name, parser in sub.items():
        for action in parser._actions:
            for option in action.option_strings if action.dest != "help" else ():
                assert f"`{option}`" in cli, (name, option)
    assert "`--steps` `INT`" in cli and "| `150` |" in cli  # train's TrainConfig option with the CLI's own default
    assert "`bfcl`" in cli and str(REPO) not in cli  # the same page on every machine
    for f in dataclasses.fields(Settings):
        assert f"| `{ENV_VARS[f.name][0]}` |" in settings
    assert "| `MRTPO_MAX_TOKENS` | whole number, at most 131,072 | `2048` |" in settings


def test_a_drift_in_the_code_or_in_the_page_is_caught(gen, tmp_path, monkeypatch):
    """A help text changed in the code, or a page edited by hand: either way the check names the page."""
    monkeypatch.setattr(gen, "PAGES", {k: tmp_path / p.name for k, p in gen.PAGES.items()})
    assert gen.main([]) == 0 and gen.stale_pages() == []
    page = gen.PAGES["settings"]
    page.write_text(page.read_text().replace("`2048`", "`4096`"))
    assert gen.stale_pages() == ["settings"]
    assert gen.main(["--check"]) == 1
    gen.main([])
    import mrtpo_viz.cli as cli

    original = cli._add_serve

    def _add_serve(sub):
        original(sub)
        sub.choices["serve"].add_argument("--share", action="store_true", help="a new option")

    monkeypatch.setitem(cli.COMMANDS, "serve", _add_serve)
    assert gen.stale_pages() == ["cli"]
    assert "`--share`" in gen.cli_page()
