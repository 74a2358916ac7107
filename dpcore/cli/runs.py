"""`python -m dpcore runs prune [--root DIR] [--yes] [--json]`: clear what killed runs left behind.

A run trains in ROOT/.NAME.partial-XXXX and is moved into place when it ends; a process killed
mid-run (kill -9, a crash, a reboot) leaves that folder, listed as "interrupted". `prune` removes
those whose name no process holds locked, after confirming (or with --yes).
"""
from __future__ import annotations

import sys


def register(sub) -> None:
    p = sub.add_parser("runs", help="manage the runs folder (prune interrupted runs)",
                       description=__doc__.splitlines()[0])
    verbs = p.add_subparsers(dest="verb", required=True, parser_class=type(p))
    prune = verbs.add_parser("prune", help="delete interrupted .NAME.partial-* folders (asks first)")
    prune.add_argument("--root", default=None, help="runs folder (default $DPCORE_RUNS_DIR or runs/)")
    prune.add_argument("--yes", action="store_true", help="do not ask; delete them")
    prune.add_argument("--json", action="store_true", help="print one JSON object")
    prune.set_defaults(func=cmd_prune)


def cmd_prune(args) -> int:
    from pathlib import Path

    from dpcore.cli import print_json
    from dpcore.cli.paths import runs_dir
    from dpcore.errors import RunError
    from dpcore.limits import check_name
    from dpcore.runs.folders import interrupted_partials, prune_partials

    if args.root is not None:
        check_name(args.root, "--root")
    root = Path(args.root) if args.root is not None else runs_dir()
    if not root.is_dir():
        raise RunError(f"no runs folder at {str(root)!r}")
    found = [p.name[1:] for p in interrupted_partials(root)]
    if found and not args.yes:
        if args.json or not sys.stdin.isatty():
            raise RunError(f"{len(found)} interrupted run folder(s) in {str(root)!r}; "
                           "add --yes to delete them")
        print("\n".join(found))
        if input(f"delete these {len(found)} interrupted run folder(s)? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 0
    removed = prune_partials(root) if found else []
    if args.json:
        print_json({"root": str(root), "removed": removed})
    else:
        print(f"removed {len(removed)} interrupted run folder(s)" + "".join(f"\n  {n}" for n in removed))
    return 0
