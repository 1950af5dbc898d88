"""Click pieces every ``ekstrain`` command shares (the tree itself is built in ekstrain/cli/main.py).

* :func:`command_from_parser`: a subcommand declared with argparse's ``add_argument`` calls (one
  declaration per flag, where its handler lives) becomes a Click command: Click parses, prints the help
  (with defaults), suggests the closest flag, and the handler still receives an ``argparse.Namespace``.
* :class:`ArgType`: an argparse ``type=`` function and ``choices`` as a Click type; a bad choice names the
  closest one ("did you mean ...").
* :func:`one_line`: a Click usage error as one line naming the flag and the fix (exit 2 is the caller's).
* :func:`dumps`: strict JSON (never NaN/Infinity), :func:`print_table`: rich on a terminal, plain text otherwise.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click

Handler = Callable[[argparse.Namespace], int]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest candidate, or ``""``."""
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class ArgType(click.ParamType):
    """An argparse ``type=`` callable plus ``choices`` as one Click type.

    ``argparse.ArgumentTypeError``'s one-line reason is kept; ``int``/``float`` failures read as argparse's
    ("invalid int value: 'x'"); a value outside ``choices`` names them and the closest one.
    """

    def __init__(self, func: Callable[[str], Any] | None = None, choices: Sequence[Any] | None = None) -> None:
        self.func = func
        self.choices = list(choices) if choices is not None else None
        self.name = getattr(func, "__name__", "text").strip("_") if func is not None else "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value  # a default: argparse converts string defaults only
        result: Any = value
        if self.func is not None:
            try:
                result = self.func(value)
            except argparse.ArgumentTypeError as exc:
                self.fail(str(exc), param, ctx)
            except (TypeError, ValueError):
                self.fail(f"invalid {self.name} value: {value!r}", param, ctx)
        if self.choices is not None and result not in self.choices:
            shown = ", ".join(str(c) for c in self.choices)
            self.fail(f"invalid choice: {value!r} (choose from {shown}){did_you_mean(value, self.choices)}", param, ctx)
        return result

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str | None:
        if self.choices is not None:
            return "{" + ",".join(str(c) for c in self.choices) + "}"
        return None


def flag_of(param: click.Parameter | None) -> str:
    if param is None:
        return "argument"
    opts = list(getattr(param, "opts", []) or [])
    return "/".join(o for o in opts if o.startswith("--")) or "/".join(opts) or (param.name or "argument").upper()


def one_line(exc: click.ClickException) -> str:
    """``error: ekstrain job render: argument --nodes: 0 must be at least 1 (see ekstrain job render --help)``."""
    ctx = getattr(exc, "ctx", None)
    prog = ctx.command_path if ctx is not None else "ekstrain"
    if isinstance(exc, click.MissingParameter):
        what = f"argument {flag_of(exc.param)} is required"
    elif isinstance(exc, click.BadParameter):
        what = f"argument {flag_of(exc.param)}: {exc.message}"
    elif isinstance(exc, click.NoSuchOption):
        close = f"; did you mean {exc.possibilities[0]}?" if exc.possibilities else ""
        what = f"unrecognized argument {exc.option_name}{close}"
    elif isinstance(exc, click.exceptions.NoSuchCommand):
        close = f"; did you mean {exc.possibilities[0]!r}?" if exc.possibilities else ""
        commands = ", ".join(sorted(getattr(ctx.command, "commands", {}))) if ctx is not None else ""
        what = f"no command {exc.command_name!r}{close}" + (f" (commands: {commands})" if commands else "")
    else:
        what = exc.format_message()
    return " ".join(f"error: {prog}: {what} (see {prog} --help)".split())


def error_lines(command: str, message: object) -> str:
    """The one CLI voice: ``error: <command>: <what>`` then, when the message carries one (``...; fix: ...``),
    ``fix: <what to do>`` on its own line."""
    what, sep, fix = str(message).partition("; fix: ")
    return f"error: {command}: {what}" + (f"\nfix: {fix}" if sep else "")


def rounded(value: Any, digits: int = 2) -> Any:
    """``value`` with every float rounded to ``digits`` decimals (JSON for people: 168.0, not
    168.00000000000003); ints, strings and booleans as they are."""
    if isinstance(value, float):
        return round(value, digits) if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v, digits) for v in value]
    return value


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dumps(value: Any, indent: int | None = 2) -> str:
    """Strict JSON: a non-finite float becomes null, so ``json.loads`` of any strict parser reads it."""
    return json.dumps(_finite(value), indent=indent, allow_nan=False, default=str)


def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """The Markdown tables of ``text`` as rows keyed by their header (for ``--json`` of a Markdown report)."""
    tables: list[list[dict[str, str]]] = []
    header: list[str] | None = None
    for line in [*text.splitlines(), ""]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else None
        if cells is None:
            header = None
        elif header is None:
            header = cells
            tables.append([])
        elif not all(set(c) <= set("-:") for c in cells):
            tables[-1].append(dict(zip(header, cells, strict=False)))
    return tables


def plain_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) if rows else len(c) for c in columns}
    line = lambda r: "  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns).rstrip()  # noqa: E731
    return "\n".join([line({c: c for c in columns}), *(line(r) for r in rows)])


def print_table(rows: list[dict[str, Any]], columns: Sequence[str], title: str | None = None) -> None:
    """A table on stdout: rich's box drawing on a terminal, aligned plain text (greppable) otherwise."""
    if sys.stdout.isatty():
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:  # rich is a dependency; a broken install still prints the table
            pass
        else:
            table = Table(title=title)
            for c in columns:
                table.add_column(c)
            for r in rows:
                table.add_row(*(str(r.get(c, "")) for c in columns))
            Console().print(table)
            return
    if title:
        print(title)
    print(plain_table(rows, columns))


# ---- argparse declarations -> Click ------------------------------------------------------------------


def _option(action: argparse.Action) -> click.Parameter:
    if not action.option_strings:
        return click.Argument(
            [action.dest],
            nargs=-1 if action.nargs in ("*", "+") else 1,
            required=action.nargs == "+",
            type=ArgType(action.type, action.choices),  # type: ignore[arg-type]
        )
    decls = [*action.option_strings, action.dest]
    help_text = action.help if action.help is not argparse.SUPPRESS else None
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        return click.Option(decls, is_flag=True, default=action.default, help=help_text)
    if isinstance(action, argparse._StoreConstAction):
        return click.Option(decls, flag_value=action.const, default=action.default, help=help_text)
    multiple = isinstance(action, argparse._AppendAction)
    default = action.default
    show = default is not None and default is not False and default != [] and default != ""  # 0 is a default
    # Click 8.3+ takes an explicit default=None as a value given (its UNSET sentinel means "no default"), so a
    # required option passed default=None was never reported missing: a required option gets no default.
    given_default = tuple(default or ()) if multiple else default
    unset: dict[str, Any] = {} if action.required and default is None else {"default": given_default}
    return click.Option(
        decls,
        type=ArgType(action.type, action.choices),  # type: ignore[arg-type]
        multiple=multiple,
        **unset,
        required=bool(action.required),
        help=help_text,
        metavar=action.metavar if isinstance(action.metavar, str) else None,
        show_default=show,
    )


def _given(value: Any, default: Any) -> bool:
    """A flag was given: compared by identity for None/False, so ``--checkpoint-gib 0`` (0 == False) counts."""
    return value is not None and value is not False and not (default is not None and value == default)


def _exclusive(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    """argparse's mutually exclusive groups, checked after Click parsed (same messages)."""
    for group in parser._mutually_exclusive_groups:
        given = [a for a in group._group_actions if _given(getattr(ns, a.dest, None), a.default)]
        flags = [a.option_strings[0] for a in group._group_actions]
        if len(given) > 1:
            raise click.UsageError(
                f"argument {given[1].option_strings[0]}: not allowed with argument {given[0].option_strings[0]}"
            )
        if group.required and not given:
            raise click.UsageError(f"one of the arguments {' '.join(flags)} is required")


def command_from_parser(
    name: str,
    parser: argparse.ArgumentParser,
    run: Handler,
    help_text: str | None = None,
    examples: dict[str, str] | None = None,
    path: str = "",
    fixed: dict[str, Any] | None = None,
) -> click.Command:
    """The Click command (or group, when the parser has subparsers) that parses what ``parser`` declares.

    ``run`` gets the same Namespace argparse would have built (``set_defaults`` included); ``examples``
    maps a command path (``"plan search"``) to the example lines shown at the end of its ``--help``.
    """
    fixed = dict(fixed or {})
    full = f"{path} {name}".strip()
    example = (examples or {}).get(full)
    epilog = "\b\nExamples:\n" + "\n".join(f"  {line}" for line in example.strip().splitlines()) if example else None
    description = help_text or parser.description
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if subs:
        sub = subs[0]
        helps = {a.dest: a.help for a in sub._choices_actions}
        group = click.Group(name, help=description, epilog=epilog, no_args_is_help=True)
        for child_name, child in sub.choices.items():
            group.add_command(
                command_from_parser(
                    child_name,
                    child,
                    run,
                    helps.get(child_name),
                    examples,
                    full,
                    {**fixed, **parser._defaults, sub.dest: child_name},
                )
            )
        return group
    params = [
        _option(a)
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction | argparse._VersionAction)
    ]

    def callback(**values: Any) -> int:
        ns = argparse.Namespace(**fixed, **parser._defaults)
        for key, value in values.items():
            setattr(ns, key, list(value) if isinstance(value, tuple) else value)
        _exclusive(parser, ns)
        ctx = click.get_current_context()
        ns.script_args = list((ctx.obj or {}).get("script_args", []))
        return int(run(ns))

    return click.Command(name, callback=callback, params=params, help=description, epilog=epilog)


__all__ = [
    "ArgType",
    "command_from_parser",
    "did_you_mean",
    "dumps",
    "flag_of",
    "markdown_tables",
    "one_line",
    "plain_table",
    "print_table",
]
