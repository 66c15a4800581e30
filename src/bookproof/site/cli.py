"""The two commands of the site: build it, serve it.

`build_site.py` exits 0 when the site was built, 1 when the book cannot be
published (a chapter does not hold, a Vocabulary section is malformed, a
warning under --warnings-as-errors), 2 when its inputs are unusable (a
malformed manifest, a stale or incomplete report, an unknown option).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bookproof.layout import DEFAULT_MANIFEST
from bookproof.site.build import DEFAULT_OUT, EXIT_USAGE, BuildError, BuildOptions, build_site
from bookproof.site.serve import HOST, make_server
from bookproof.verify.environment import display_path

__all__ = ["build_main", "serve_main"]

BUILD_COMMAND = "uv run python scripts/build_site.py"


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="build_site.py",
        description=(
            "Build the book's website from the chapters' Markdown. Verifies the book first "
            "(or reads --report), and refuses to publish a chapter that does not hold."
        ),
        epilog="Exit status: 0 built, 1 the book cannot be published, 2 unusable inputs.",
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="PATH",
        help="use this JSON report of `verify_book_assets_v2.py --textbook --json PATH` "
        "instead of verifying the book now; refused when stale",
    )
    parser.add_argument(
        "--manifest",
        type=Path,
        default=DEFAULT_MANIFEST,
        metavar="PATH",
        help=f"the book manifest (default: {display_path(DEFAULT_MANIFEST)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"build folder; the site lands in DIR/html (default: {display_path(DEFAULT_OUT)})",
    )
    parser.add_argument(
        "-W",
        "--warnings-as-errors",
        action="store_true",
        help="fail the build on any warning (a broken cross-reference, a missing README)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="verify up to N chapters in parallel (default: 1)",
    )
    return parser


def build_main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.jobs < 1:
        parser.error(f"argument -j/--jobs: must be at least 1: {arguments.jobs}")
    options = BuildOptions(
        manifest=arguments.manifest,
        out=arguments.out,
        report=arguments.report,
        warnings_as_errors=arguments.warnings_as_errors,
        jobs=arguments.jobs,
    )
    try:
        build_site(options)
    except BuildError as error:
        print(f"build_site: error: {error}", file=sys.stderr)
        return error.status
    except KeyboardInterrupt:
        print("build_site: interrupted", file=sys.stderr)
        return 1
    return 0


def serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="serve_site.py",
        description=f"Serve the built site on {HOST} (this machine only) until Ctrl-C.",
    )
    parser.add_argument(
        "--port", type=_port, default=8000, help="port on 127.0.0.1 (default: 8000)"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=DEFAULT_OUT / "html",
        metavar="DIR",
        help=f"the built site (default: {display_path(DEFAULT_OUT / 'html')})",
    )
    return parser


def serve_main(argv: Sequence[str] | None = None) -> int:
    arguments = serve_parser().parse_args(argv)
    root: Path = arguments.dir
    if not (root / "index.html").is_file():
        print(
            f"serve_site: error: no built site in {root}; build it first with: {BUILD_COMMAND}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        server = make_server(root, arguments.port)
    except OSError as error:
        print(
            f"serve_site: error: cannot listen on {HOST}:{arguments.port}: {error.strerror}; "
            "choose another port with --port",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(
        f"serving {root} at http://{HOST}:{server.server_address[1]}/ (Ctrl-C to stop)", flush=True
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        server.server_close()
    return 0
