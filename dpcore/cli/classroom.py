"""`python -m dpcore class create --name NAME --students N --out class.json [--codes codes.csv] [--force]`
and `python -m dpcore class check --file class.json`.

Writes the class file (scrypt hashes of the access codes, never the codes) and prints each
member's code once; `--codes` also writes them to a CSV the lecturer hands out (kept apart from
the class file, mode 0600). Start the app on it with `make run CLASS=class.json`.
"""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("class", help="class mode: create a class file with access codes",
                       description=__doc__.splitlines()[0])
    verbs = p.add_subparsers(dest="verb", required=True, parser_class=type(p))
    create = verbs.add_parser("create", help="write a class file; print each member's access code once")
    create.add_argument("--name", required=True, help="the class's name (shown at sign-in)")
    create.add_argument("--students", required=True, type=_count, help="how many students (1-1000)")
    create.add_argument("--out", required=True, help="the class file to write (refused if it exists)")
    create.add_argument("--codes", default=None, help="also write the plain codes to this CSV (for handing out)")
    create.add_argument("--force", action="store_true", help="replace existing files (old codes stop working)")
    create.add_argument("--json", action="store_true", help="print one JSON object (with the codes)")
    create.set_defaults(func=cmd_create)
    check = verbs.add_parser("check", help="read a class file and say whom it admits (before `make run CLASS=`)")
    check.add_argument("--file", required=True, help="the class file")
    check.set_defaults(func=cmd_check)
    serve = verbs.add_parser("serve", help="class mode: the web server and the training service, each "
                                           "restarted apart (what `make run CLASS=…` runs)")
    serve.add_argument("--file", required=True, help="the class file")
    serve.add_argument("--address", default="0.0.0.0", help="the web server's address (default 0.0.0.0)")
    serve.add_argument("--port", type=_count, default=8501, help="the web server's port (default 8501)")
    serve.add_argument("--runs", default=None, help="the runs root (default $DPCORE_RUNS_DIR, else ./runs)")
    serve.set_defaults(func=cmd_serve)
    svc = verbs.add_parser("queue-service", help="the class queue's training service alone (Ray driver + dispatcher)")
    svc.add_argument("--runs", default=None, help="the runs root (default $DPCORE_RUNS_DIR, else ./runs)")
    svc.add_argument("--ray-address", default=None,
                     help="an existing Ray cluster (default $RAY_ADDRESS, else a local Ray on 127.0.0.1)")
    svc.add_argument("--cpus", type=_count, default=None, help="CPUs of the local Ray (default: every core)")
    svc.set_defaults(func=cmd_queue_service)


def _runs_root(arg):
    import os
    from pathlib import Path

    from dpcore.limits import check_name

    return Path(check_name(arg, "--runs") if arg else (os.environ.get("DPCORE_RUNS_DIR") or "runs")).expanduser()


def cmd_serve(args) -> int:
    from pathlib import Path

    from dpcore.classroom import load_class_file
    from dpcore.jobs.class_server import supervise
    from dpcore.limits import check_name

    path = Path(check_name(args.file, "--file"))
    load_class_file(path)  # a broken class file stops here, before anything starts
    app = Path(__file__).resolve().parents[2] / "app.py"
    return supervise(_runs_root(args.runs), class_file=path, address=args.address, port=args.port, app=app)


def cmd_queue_service(args) -> int:
    import os
    import sys

    from dpcore.jobs.queue_service import EXIT_RAY_LOST, serve

    code = serve(_runs_root(args.runs), address=args.ray_address, num_cpus=args.cpus)
    if code == EXIT_RAY_LOST:  # a dead Ray's exit hooks can hang: leave at once
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def cmd_check(args) -> int:
    from dpcore.classroom import load_class_file
    from dpcore.limits import check_name

    cf = load_class_file(check_name(args.file, "--file"))
    print(f"class {cf.name!r}: {len(cf.members) - 1} students and a lecturer; sessions last "
          f"{cf.session_hours:g} h; {cf.max_wrong} wrong codes per {cf.window_seconds:g} s, then a wait")
    return 0


def _count(text: str) -> int:
    import argparse

    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None


def cmd_create(args) -> int:
    import csv
    import io
    import json
    from pathlib import Path

    from dpcore.classroom.classfile import ClassFileError, create_class, write_new
    from dpcore.cli import print_json
    from dpcore.cli.paths import _writable_dir
    from dpcore.limits import check_name

    out = Path(check_name(args.out, "--out"))
    codes_out = Path(check_name(args.codes, "--codes")) if args.codes is not None else None
    if codes_out is not None and codes_out.resolve() == out.resolve():
        raise ClassFileError("--codes must be another file than --out (the class file never holds a code)")
    for path, flag in ((out, "--out"), (codes_out, "--codes")):  # every check before any work
        if path is None:
            continue
        if path.exists() and not args.force:
            raise ClassFileError(f"{str(path)!r} exists; add --force to replace it (its codes then stop working)")
        _writable_dir(path.parent if str(path.parent) else Path("."), flag)
    doc, codes = create_class(args.name, args.students)
    if codes_out is not None:
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(["member", "access code"])
        writer.writerows(codes.items())
        write_new(codes_out, buf.getvalue(), force=args.force)
    write_new(out, json.dumps(doc, indent=1) + "\n", force=args.force)
    if args.json:
        print_json({"class": doc["name"], "out": str(out), "codes_csv": str(codes_out) if codes_out else None,
                    "codes": codes})
        return 0
    print(f"class {doc['name']!r}: {len(codes) - 1} students and a lecturer -> {out}")
    print("Access codes (shown once; the class file keeps only their hashes):")
    for member, code in codes.items():
        print(f"  {member:<14} {code}")
    if codes_out is not None:
        print(f"The codes are also in {codes_out} (hand them out, then delete it).")
    return 0
