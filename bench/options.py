"""Each mode's options declared once: its flag and argparse's settings, and the make variable a reader sets it with
(`make latency RATES="50 100"`). From the one declaration come the mode's argparse parser, the command line make
runs (make passes the variables a reader types through the environment, and the mode turns them into its flags,
so the set records the same command line as the flags typed by hand), `make help`'s list and the docs' table. A mode
behind several make targets (`make bench`, `sweep`, `overload`) declares each target's options in its order, its
fixed flags among them, and the recipe names the target after the module (`-m bench.modes.bench sweep`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Option:
    flag: str  # "--rates"
    variable: str | None  # make's name for it, "RATES"; None: on the command line only
    help: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)  # argparse's add_argument keywords
    exclusive: str | None = None  # options with the same name here exclude each other
    unset: str = ""  # what make passes where the variable is not set: the flag always on the command line
    instead: Mapping[str, str] = field(default_factory=dict)  # a value make passes another in place of
    aliases: tuple[str, ...] = ()  # argparse's other names of the flag ("--requests" of "-n")

    @classmethod
    def some_of(cls, flag: str, variable: str, choices: Collection[str], metavar: str) -> Option:
        """Any of `choices`, every one by default: the scenarios, targets, loads or events to run."""
        return cls(
            flag, variable, None, {"nargs": "*", "default": list(choices), "choices": choices, "metavar": metavar}
        )

    @classmethod
    def out(cls, suffix: str) -> Option:
        return cls("--out", "OUT", f"the result set's folder (default results/<time>{suffix})", {"type": Path})

    def always(self, unset: str = "given") -> Option:
        """The option on its make target's command line whether its variable is set or not: `unset` where it is
        not (`--client $(or $(CLIENT),auto)`); a switch, given (`--cold-build`)."""
        return replace(self, unset=unset)

    @property
    def switch(self) -> bool:
        return self.settings.get("action") == "store_true"

    @property
    def words(self) -> bool:
        """Whether the variable's value is split into words, one argument each (`SCENARIOS="a b"`), rather than
        passed as one (`RATES="50 100"`, which the option's own type reads)."""
        return self.settings.get("nargs") in ("*", "+")

    def from_variable(self, value: str) -> list[str]:
        """The arguments a variable's value stands for: none where it is empty, as make's `$(if $(X),--x $(X))`, or
        those of `unset`, as make's `--x $(or $(X),unset)`."""
        value = value if value.strip() else self.unset
        value = self.instead.get(value.strip(), value)
        if not value.strip():
            return []
        if self.switch:
            return [self.flag]
        return [self.flag, *value.split()] if self.words else [self.flag, value]

    def shown_default(self) -> str:
        """The default as `make help` shows it: what make passes where the variable is unset, else the mode's
        default; nothing where it is every choice."""
        if self.unset and not self.switch:
            return f'"{self.unset}"' if " " in self.unset else self.unset
        default = self.settings.get("default")
        if self.switch or default is None or default == [] or ("choices" in self.settings and self.words):
            return ""  # every choice
        if isinstance(default, list | tuple):
            return '"' + " ".join(map(shown, default)) + '"'
        return shown(default)


def shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Options:
    target: str  # make's target, "latency"
    prog: str  # "python -m bench.modes.latency"
    options: tuple[Option, ...]
    # The other make targets that run the same mode, each with its options in its order (`make sweep`, `make
    # overload` beside `make bench`): the recipe names the target after the module.
    others: tuple[Options, ...] = ()

    def parser(
        self, description: str | None, formatter: type[argparse.HelpFormatter] = argparse.HelpFormatter
    ) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog=self.prog, description=description, formatter_class=formatter)
        groups: dict[str, Any] = {}
        every: dict[str, Option] = {}  # each flag once: the targets share most of theirs
        for options in (self, *self.others):
            for option in options.options:
                every.setdefault(option.flag, option)
        for option in every.values():
            place = parser
            if option.exclusive:
                if option.exclusive not in groups:
                    groups[option.exclusive] = parser.add_mutually_exclusive_group()
                place = groups[option.exclusive]
            keywords = dict(option.settings)
            if option.help:
                keywords["help"] = option.help
            place.add_argument(option.flag, *option.aliases, **keywords)
        return parser

    def arguments(self, argv: Sequence[str] | None, environment: Mapping[str, str] | None = None) -> list[str]:
        """The mode's arguments: `argv` where given (a test, a caller); run as a program, its command line, after
        the flags of the make variables set where make runs it (MAKELEVEL: make's recipes have it). A command line
        that starts with one of the mode's targets (`sweep`) is that target's: its options, its fixed flags among
        them, in its order, and by hand, without make, its fixed flags and defaults alone."""
        if argv is not None:
            return list(argv)
        environment = os.environ if environment is None else environment
        typed = sys.argv[1:]
        chosen = {options.target: options for options in (self, *self.others)}.get(typed[0] if typed else "")
        if chosen:
            typed = typed[1:]
        if "MAKELEVEL" not in environment:
            if not chosen:
                return typed
            environment = {}  # by hand: no variable is make's
        from_make = [
            argument
            for option in (chosen or self).options
            if option.variable or option.unset
            for argument in option.from_variable(environment.get(option.variable or "", ""))
        ]
        return from_make + typed

    def variables(self) -> str:
        """What `make help` shows after the target's line: each variable with its single default."""
        return " ".join(f"{option.variable}={option.shown_default()}" for option in self.options if option.variable)

    def table(self) -> list[str]:
        """The docs' table of the mode's options, in Markdown."""
        lines = ["| make | flag | default | what |", "|---|---|---|---|"]
        for option in self.options:
            variable = f"`{option.variable}=`" if option.variable else "–"
            choices = option.settings.get("choices")
            default = "every one" if choices and option.words and "default" in option.settings else "–"
            default = "always" if option.unset and not option.variable else default
            what = option.help or (f"one or more of: {', '.join(choices)}" if choices else "")
            lines.append(f"| {variable} | `{option.flag}` | {option.shown_default() or default} | {what} |")
        return lines
