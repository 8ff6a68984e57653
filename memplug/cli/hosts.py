"""A click group with one command per registered host that has a given part."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from memplug.hosts import HostSpec, Part, builtin, with_part


class HostGroup(click.Group):
    """Subcommands are the hosts of the registry (:mod:`memplug.hosts`) with ``part``;
    ``make`` builds a host's command. Nothing is looked up until a command is asked
    for, and a built-in host is found without reading package metadata."""

    def __init__(
        self, *args: Any, part: Part, make: Callable[[HostSpec], click.Command], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.part: Part = part
        self.make = make

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(with_part(self.part))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = builtin(cmd_name) or with_part(self.part).get(cmd_name)
        if spec is None or getattr(spec, self.part) is None:
            return None
        return self.make(spec)
