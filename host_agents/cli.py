"""Command lines from config dataclasses, and one way for entry points to fail.

Every agent keeps its settings in a dataclass whose fields carry a docstring (a string literal
right after the field, as in ``ReplayConfig``). ``add_config_args`` turns each field into a
``--kebab-case`` flag whose help is that docstring and whose default is the field's, so
``--help`` and the code cannot drift apart. ``run_main`` turns the errors a user can cause (bad
configuration, unreachable server, unknown environment) into one ``error: ...`` line and a
non-zero exit instead of a traceback.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import os
import sys
import textwrap
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ConfigError", "add_config_args", "config_from_args", "field_docs", "run_main"]

T = TypeVar("T")


class ConfigError(ValueError):
    """A setting that cannot work (unknown environment, batch larger than the replay, ...)."""


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of dataclass ``cls`` (and of its dataclass bases)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0].body  # type: ignore[attr-defined]
        for node, nxt in zip(body, body[1:] + [None], strict=True):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _base_type(annotation: Any) -> tuple[type, bool]:
    """(scalar type, whether None is allowed) of a field annotation such as ``int | None``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported annotation {annotation!r}")
        return args[0], True
    return annotation, False


def _parser_for(kind: type, optional: bool, name: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        if optional and text.lower() in ("none", ""):
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--{name} wants {kind.__name__}, got {text!r}") from None

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def add_config_args(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type,
    prefix: str = "",
    defaults: dict[str, Any] | None = None,
    skip: tuple[str, ...] = (),
) -> None:
    """One flag per field of dataclass ``cls``: ``--{prefix}{field-name}``. ``defaults`` overrides
    field defaults (for example a replay table size that suits this agent)."""
    docs = field_docs(cls)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip or not f.init:
            continue
        flag = prefix + f.name.replace("_", "-")
        if defaults and f.name in defaults:
            default = defaults[f.name]
        elif f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        kind, optional = _base_type(hints[f.name])
        help_text = docs.get(f.name, "").replace("%", "%%")  # argparse formats help with %
        dest = (prefix + f.name).replace("-", "_")
        if kind is bool:
            parser.add_argument(
                f"--{flag}",
                dest=dest,
                action=argparse.BooleanOptionalAction,
                default=default,
                help=f"{help_text} (default: %(default)s)",
            )
            continue
        if kind not in (int, float, str):
            raise TypeError(f"{cls.__name__}.{f.name}: unsupported type {kind!r}")
        parser.add_argument(
            f"--{flag}",
            dest=dest,
            type=_parser_for(kind, optional, flag),
            default=default,
            metavar=kind.__name__.upper(),
            help=f"{help_text} (default: %(default)s)",
        )


def config_from_args(cls: type[T], args: argparse.Namespace, prefix: str = "", **extra: Any) -> T:
    """Build ``cls`` from the flags ``add_config_args`` added; a ValueError from the dataclass's
    own checks becomes a ConfigError naming the flag-less message."""
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        dest = (prefix + f.name).replace("-", "_")
        if f.init and hasattr(args, dest):
            values[f.name] = getattr(args, dest)
    values.update(extra)
    try:
        return cls(**values)
    except ValueError as e:
        raise ConfigError(str(e)) from e


def _user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "the setup is wrong", not "the code is wrong". Gymnasium's errors are
    not among them: ``make_env`` turns the ones a user causes into ConfigError."""
    errors: list[type[BaseException]] = [ConfigError, ConnectionError, TimeoutError]
    try:
        from host_agents.replay_client import ReplayError

        errors.append(ReplayError)
    except ImportError:  # pragma: no cover - the package is always importable here
        pass
    try:  # redis-py's own ConnectionError / TimeoutError are not the built-in ones
        import redis.exceptions

        errors += [redis.exceptions.ConnectionError, redis.exceptions.TimeoutError]
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def run_main(prog: str, body: Callable[[], int | None]) -> int:
    """Run ``body``; a user error prints ``prog: error: message`` and returns 2 (configuration)
    or 1 (runtime: unreachable server, timeout); Ctrl-C returns 130. ``INNET_DEBUG=1`` in the
    environment re-raises instead, with the traceback."""
    try:
        return int(body() or 0)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except _user_errors() as e:
        if os.environ.get("INNET_DEBUG"):
            raise
        code = 2 if isinstance(e, ConfigError) else 1
        kind = "configuration error" if code == 2 else "error"
        print(f"{prog}: {kind}: {e} (INNET_DEBUG=1 shows the traceback)", file=sys.stderr)
        return code
