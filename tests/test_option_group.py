"""`divmeter.apps.cli.options.option_group`: a dataclass parameter stands for its fields'
options (and arguments) where the parameter is, and the command receives one instance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer
from typer.testing import CliRunner

from divmeter.apps.cli.options import option_group

_Src = Annotated[str, typer.Argument(help="Input file.", show_default=False)]
_Seed = Annotated[int, typer.Option("--seed", help="Seed.")]
_Tag = Annotated[str, typer.Option("--tag", help="Tag.")]
_Loud = Annotated[bool, typer.Option("--loud", help="Louder.")]


@dataclass
class _Input:
    src: _Src
    seed: _Seed = 0
    tag: _Tag = "t"


def _app(seen: list[object]) -> typer.Typer:
    app = typer.Typer(add_completion=False)

    @app.command()
    @option_group
    def run(given: _Input, loud: _Loud = False) -> None:
        seen.append((given, loud))

    return app


def test_a_group_with_an_argument_gets_its_values_in_one_instance() -> None:
    seen: list[object] = []
    res = CliRunner().invoke(_app(seen), ["in.txt", "--tag", "x", "--seed", "7", "--loud"])
    assert res.exit_code == 0, res.output
    assert seen == [(_Input(src="in.txt", seed=7, tag="x"), True)]


def test_a_groups_defaults_apply_and_its_argument_is_required() -> None:
    seen: list[object] = []
    app = _app(seen)
    assert CliRunner().invoke(app, ["a"]).exit_code == 0
    assert seen == [(_Input(src="a", seed=0, tag="t"), False)]
    res = CliRunner().invoke(app, [])
    assert res.exit_code == 2
    assert seen == [(_Input(src="a", seed=0, tag="t"), False)]  # the command did not run


def test_help_lists_the_fields_where_the_group_stands() -> None:
    out = CliRunner().invoke(_app([]), ["--help"], env={"COLUMNS": "100"}).output
    assert out.index("--seed") < out.index("--tag") < out.index("--loud")
    assert "Input file." in out
