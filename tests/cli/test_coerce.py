"""The CLI's own converter for simple option types: same values, same refusals as typer's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from sealmem.client.cli import coerce
from sealmem.client.cli.readable import ReadableGroup
from sealmem.client.cli.root import app
from tests.support.cli import in_process


def _params() -> list[object]:
    out: list[object] = []

    def walk(command: object) -> None:
        out.extend(getattr(command, "params", []))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    root = typer.main.get_command(app)
    walk(root)
    out.extend(root.get_params(typer.Context(root)))  # --version and the completion flags
    return out


def test_every_parameter_of_the_cli_gets_the_plain_converter() -> None:
    params = _params()
    assert params
    typer_s = [p for p in params if not isinstance(p._runtime_param, coerce._Plain)]  # type: ignore[attr-defined]
    assert [getattr(p, "name", p) for p in typer_s] == []


def _tool() -> typer.Typer:
    tool = typer.Typer(cls=ReadableGroup, rich_markup_mode=None)

    @tool.command()
    def run(
        n: Annotated[int, typer.Option("--n", min=1, max=9)] = 1,
        x: Annotated[float, typer.Option("--x")] = 0.5,
        flag: Annotated[bool, typer.Option("--flag")] = False,
        word: Annotated[list[str] | None, typer.Option("--word")] = None,
        where: Annotated[Path, typer.Option("--where", exists=True)] = Path("."),
        many: Annotated[list[Path] | None, typer.Option("--many")] = None,
    ) -> None:
        typer.echo(repr((n, x, flag, word or [], where, many or [])))

    @tool.command()
    def other() -> None:
        pass

    return tool


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (
            ["--n", "3", "--x", "2.5", "--flag", "--word", "a", "--word", "b"],
            "(3, 2.5, True, ['a', 'b']",
        ),
        (["--many", "p", "--many", "q"], "[PosixPath('p'), PosixPath('q')]"),
        ([], "(1, 0.5, False, [], PosixPath('.'), [])"),
    ],
)
def test_values_convert_as_typer_converts_them(args: list[str], shown: str) -> None:
    done = CliRunner().invoke(_tool(), ["run", *args])
    assert done.exit_code == 0, done.output
    assert shown in done.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--n", "0"], "Input should be greater than or equal to 1"),
        (["--n", "10"], "Input should be less than or equal to 9"),
        (["--n", "two"], "Input should be a valid integer, unable to parse string as an integer"),
        (["--n", "2.5"], "Input should be a valid integer, unable to parse string as an integer"),
        (["--x", "half"], "Input should be a valid number, unable to parse string as a number"),
        (["--x", "nan"], "Input should be a finite number"),
        (["--where", "/no/such/dir"], "does not exist"),
    ],
)
def test_bad_values_are_refused_with_typers_words(args: list[str], message: str) -> None:
    done = CliRunner().invoke(_tool(), ["run", *args])
    assert done.exit_code == 2
    words = re.sub("[\u2500-\u257f]", " ", done.output).split()  # typer may draw a box
    assert message in " ".join(words)


def _typers_own() -> typer.Typer:
    """``_tool`` as typer converts it (pydantic, ``SEALMEM_PLAIN_CLI=1``): the reference."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEALMEM_PLAIN_CLI", "1")
        return typer.main.get_command(_tool())  # type: ignore[return-value]


def test_the_switch_leaves_every_parameter_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEALMEM_PLAIN_CLI", "1")
    params = _params()
    assert params
    assert not [p for p in params if isinstance(p._runtime_param, coerce._Plain)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "args",
    [["list", "--limit", "2", "--json"], ["list", "--limit", "two"], ["recall", "x", "-k", "0"]],
)
def test_the_cli_answers_the_same_on_either_converter(
    args: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SEALMEM_HOME", str(tmp_path))
    run = in_process(capsys, monkeypatch)
    run("remember", "the deploy needs the staging key", "--project", "app")
    answers = []
    for plain in ("0", "1"):
        monkeypatch.setenv("SEALMEM_PLAIN_CLI", plain)
        done = run(*args)
        answers.append((done.code, done.out, re.sub("[\u2500-\u257f]", " ", done.err).split()))
    assert answers[0] == answers[1]
    assert answers[0][0] == (0 if args[0] == "list" and args[2] == "2" else 2)


_ODD = [
    "5.0", "-5.00", " 7 ", "+3", "1_0", "1_0.0", "5.", "5.5", "0x10", "1e3", "\u0663",
    "\u0663.0", "\uff15", "", " ", "nan", "inf", "-inf", "1e400", "7" * 4300, "7" * 4301,
    "\udcff", "\u00a05",
]  # fmt: skip


@pytest.mark.parametrize("option", ["--n", "--x"])
@pytest.mark.parametrize("value", _ODD)
def test_odd_numbers_convert_or_fail_exactly_as_typer_s(option: str, value: str) -> None:
    """Same value or same refusal as pydantic, for the odd texts a shell hands over
    (other scripts' digits, "5.0" for an int, 4301 digits, argv bytes not UTF-8)."""
    mine = typer.main.get_command(_tool())
    theirs = _typers_own()
    results = []
    for command in (mine, theirs):
        run = command.commands["run"]  # type: ignore[attr-defined]
        param = next(p for p in run.params if option in p.opts)
        try:
            results.append(("ok", param.process_value(typer.Context(run), value)))
        except Exception as exc:  # the refusal is what is compared
            results.append((type(exc).__name__, exc.format_message()))  # type: ignore[attr-defined]
    if option == "--x" and value == "nan":  # a finite number: refused here on purpose
        assert results[0][0] == "BadParameter"
        return
    assert results[0] == results[1]


def test_a_path_with_a_nul_byte_is_a_usage_error_not_a_traceback() -> None:
    done = CliRunner().invoke(_tool(), ["run", "--where", "a\x00b"])
    assert done.exit_code == 2, done.output
    assert "embedded null byte" in done.output
