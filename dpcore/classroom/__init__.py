"""Class mode: one workbench for a class — a class file of hashed access codes, sign-in, and a
workspace folder per member.

Why a package of its own (no Streamlit here): the CLI writes the class file, the app signs people
in, and the training queue puts each job's runs in its member's workspace; all three need the same
few names, and tests reach them without a browser. Class mode is on when $DPCORE_CLASS names a
class file; without it nothing in the workbench changes.

- `classfile`: create, write, load and validate the class file (data, not code: an allow-list)
- `signin`: check a code in constant time, rate-limit wrong codes, sessions that expire
- `workspace`: each member's folder, resolving run names inside it, publishing a run to the class
"""
from dpcore.classroom.classfile import ClassFile, ClassFileError, Member, class_file, create_class, load_class_file
from dpcore.classroom.signin import RateLimiter, SignInError, check_code
from dpcore.classroom.workspace import (
    PUBLISHED,
    WORKSPACES,
    publish_run,
    published_root,
    run_folder,
    workspace_root,
    workspaces,
)

__all__ = [
    "ClassFile", "ClassFileError", "Member", "class_file", "create_class", "load_class_file",
    "RateLimiter", "SignInError", "check_code",
    "PUBLISHED", "WORKSPACES", "publish_run", "published_root", "run_folder", "workspace_root", "workspaces",
]
