"""The `modelwire` command: an offline demo, chat, sessions, keys and log inspection.

`main()` is the console-script entry point (`[project.scripts] modelwire`; also
`python -m modelwire`). Command-line usage errors print one `error: ...` line and exit with code
2; the exit codes of every command are listed in `cli.errors`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Run the `modelwire` command with `argv` (default: `sys.argv[1:]`) and exit."""
    import typer
    import typer.main
    from typer._click import exceptions as click_errors  # typer vendors click (pyproject pins)

    from .app import app
    from .errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, exit_error, json_errors, quiet_stdout
    from .helpformat import polish

    command = typer.main.get_command(app)
    polish(command)
    args = list(argv) if argv is not None else sys.argv[1:]
    json_errors("--json" in args[: args.index("--")] if "--" in args else "--json" in args)
    try:
        result = command.main(args=args, prog_name="modelwire", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as err:
        if err.ctx is not None:
            sys.stdout.write(err.ctx.get_help() + "\n")
        raise SystemExit(0) from None
    except click_errors.UsageError as err:
        hint = f" (see `{err.ctx.command_path} --help`)" if err.ctx is not None else ""
        exit_error(f"{err.format_message()}{hint}", EXIT_BAD_INPUT)
    except typer.Abort:
        sys.stderr.write("interrupted\n")
        raise SystemExit(EXIT_INTERRUPTED) from None
    except click_errors.ClickException as err:
        sys.stderr.write(f"error: {err.format_message()}\n")
        raise SystemExit(err.exit_code) from None
    except BrokenPipeError:  # `modelwire … --help | head -1`
        quiet_stdout()
        raise SystemExit(EXIT_INTERRUPTED) from None
    raise SystemExit(result if isinstance(result, int) else 0)
