"""Which folder of runs this session looks at in class mode: its own workspace, the runs the
lecturer published (read-only for students), or — for the lecturer only — any member's workspace.

Why apart from `runs_root`: writes (a training, an upload, a stored table, a sweep) always go to the
member's own workspace (`runs_root`), whatever they are looking at; reads on the pages that open
finished runs (Compare, Privacy, Runs, Story) go through `view_root`. Outside class mode both are
the runs folder and nothing here draws anything.
"""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from dpcore.classroom import ClassFileError, Member, class_file, published_root, run_folder, workspace_root
from dpcore.ui.signin import current_member, sign_out

VIEW = "dpcore.view"
OWN, PUBLISHED = "own", "published"


def base_root() -> Path:
    """The runs folder the app was started on: $DPCORE_RUNS_DIR, else ./runs (made on first use)."""
    root = Path(os.environ.get("DPCORE_RUNS_DIR") or "runs").expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


def runs_root() -> Path:
    """Where runs and uploads are saved: the base folder, in class mode the signed-in member's
    workspace in it (dpcore.classroom.workspace_root)."""
    root = base_root()
    if class_file() is None:
        return root
    member = current_member()
    if member is None:  # app.py signs people in before any page: this is a bug, never a shared folder
        raise ClassFileError("sign in first: in class mode every run belongs to a member's workspace")
    return workspace_root(root, member)


def _member() -> Member | None:
    return current_member()


def _view(member: Member) -> str:
    """The session's view, checked again on every read (a stale or forged value means "own")."""
    view = st.session_state.get(VIEW, OWN)
    if view == PUBLISHED:
        return view
    cf = class_file()
    if member.is_lecturer and cf is not None and view in {m.name for m in cf.members}:
        return view
    return OWN


def view_root() -> Path:
    """Where the pages list and open runs (the runs root outside class mode)."""
    member = _member()
    if member is None:
        return runs_root()
    view = _view(member)
    if view == PUBLISHED:
        return published_root(base_root())
    if view != OWN:
        cf = class_file()
        other = next(m for m in cf.members if m.name == view)  # _view checked it is a member
        return workspace_root(base_root(), other)
    return runs_root()


def read_only() -> bool:
    """True while a student looks at the published runs: they open and compare them, never change them."""
    member = _member()
    return member is not None and not member.is_lecturer and _view(member) == PUBLISHED


def is_published(path) -> bool:
    """A run folder under base/published (scores computed there are not written back into it)."""
    if class_file() is None:
        return False
    try:
        return Path(path).resolve().parent == (base_root() / PUBLISHED).resolve()
    except OSError:
        return False


def show_published() -> None:
    """Point the pages at the published runs (a button's callback: before the sidebar's picker draws)."""
    st.session_state[VIEW] = PUBLISHED


def first_view(member: Member) -> str:
    """Where a session starts: a student with no runs of their own lands on what the lecturer
    published (the class's Story pair among it), everyone else on their own workspace."""
    if member.is_lecturer:
        return OWN
    from dpcore.runs.store import list_runs

    try:
        own = workspace_root(base_root(), member)
        pub = published_root(base_root())
        if not (own.is_dir() and list_runs(own)) and pub.is_dir() and list_runs(pub):
            return PUBLISHED
    except Exception:  # noqa: BLE001 - a broken folder: the ordinary default
        pass
    return OWN


def run_path(name: str, root: Path | None = None) -> Path:
    """The folder of run `name` inside `root` (default: the view), never outside it."""
    return run_folder(view_root() if root is None else root, name)


def view_picker(member: Member) -> None:
    """The sidebar's "Runs of" select box: own and published; the lecturer also every member's."""
    cf = class_file()
    options = [OWN, PUBLISHED]
    if member.is_lecturer and cf is not None:
        options += [m.name for m in cf.members if m != member]
    if VIEW not in st.session_state:
        st.session_state[VIEW] = first_view(member)
    if st.session_state.get(VIEW) not in options:
        st.session_state[VIEW] = OWN
    labels = {OWN: "My workspace", PUBLISHED: "Published to the class" + ("" if member.is_lecturer else " (read-only)")}
    st.selectbox("Runs of", options, key=VIEW, format_func=lambda v: labels.get(v, f"{v}'s workspace"),
                 help="Which runs Compare, Privacy, Runs and Story list. New runs and uploads always go to "
                      "your own workspace.")


def sidebar(member: Member | None) -> None:
    """Who is signed in, the workspace picker (lecturer: every workspace) and "Sign out"."""
    if member is None:
        return
    with st.sidebar:
        role = "lecturer" if member.is_lecturer else "student"
        st.caption(f"Signed in as **{member.name}** ({role})")
        view_picker(member)
        st.button("Sign out", icon=":material/logout:", key="signin.out", on_click=sign_out)


def publish_button(path: Path, publishable: bool) -> None:
    """The lecturer's "Publish to the class" for the chosen run (nothing for students, outside class
    mode, or while looking at the published runs already)."""
    member = _member()
    if member is None or not member.is_lecturer or _view(member) == PUBLISHED:
        return

    def _publish() -> None:
        from dpcore.classroom import publish_run
        from dpcore.errors import DPCoreError

        try:
            copy = publish_run(base_root(), path)
            st.session_state["workspace.msg"] = ("success", f"Published {copy.name}: every student can open it.")
        except DPCoreError as exc:
            st.session_state["workspace.msg"] = ("error", str(exc))

    st.button("Publish to the class", icon=":material/campaign:", key="workspace.publish", disabled=not publishable,
              on_click=_publish, help="Copy this run to the published runs: students open and compare it, "
                                      "read-only (runs on built-in datasets only: a run shows its real rows)")
    if msg := st.session_state.pop("workspace.msg", None):
        from dpcore.text import md

        (st.success if msg[0] == "success" else st.error)(md(msg[1]))
