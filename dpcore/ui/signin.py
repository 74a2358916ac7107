"""Sign-in in front of every page in class mode, and who is signed in.

Why in the app and before navigation: a page must never run, and no address parameter may be
read, before the person is known — their workspace decides what every page lists. Without a class
file ($DPCORE_CLASS) `require_member` returns None at once and nothing in the app changes. The
checks themselves (constant time, rate limits, expiry) live in `dpcore.classroom.signin`; here are
only the form and the session's record (the sidebar that shows it is dpcore.ui.workspace's).
"""
from __future__ import annotations

import secrets
import threading

import streamlit as st

from dpcore.classroom import ClassFile, Member, RateLimiter, class_file
from dpcore.classroom.signin import Session, SignInError, new_session, sign_in

SESSION = "dpcore.member"
_SESSION_KEY = "dpcore.signin_key"
_LIMITERS: dict[str, RateLimiter] = {}  # per class file, for the whole server process
_LOCK = threading.Lock()


def _limiter(cf: ClassFile) -> RateLimiter:
    with _LOCK:
        if cf.fingerprint not in _LIMITERS:
            _LIMITERS[cf.fingerprint] = RateLimiter(cf.window_seconds)
        return _LIMITERS[cf.fingerprint]


def current_member() -> Member | None:
    """The signed-in member (None outside class mode, and when nobody is signed in or it expired)."""
    cf = class_file()
    if cf is None:
        return None
    session = st.session_state.get(SESSION)
    if isinstance(session, Session) and session.valid(cf):
        return session.member
    if session is not None:
        sign_out(expired=True)
    return None


def sign_out(expired: bool = False) -> None:
    """Forget everything of the session (its member, chosen data, live run handles, kept widgets)."""
    for key in list(st.session_state.keys()):
        del st.session_state[key]
    if expired:
        st.session_state["dpcore.signin_note"] = "Your session has expired: sign in again."


def require_member() -> Member | None:
    """Outside class mode: None. In class mode: the signed-in member, or the sign-in form and stop."""
    cf = class_file()  # a broken class file raises: the app shows one line and serves nothing
    if cf is None:
        return None
    member = current_member()
    if member is not None:
        return member
    _form(cf)
    st.stop()


def _form(cf: ClassFile) -> None:
    st.title(f"{cf.name}: sign in")
    st.caption("Enter the access code your lecturer gave you. Your runs and uploads are kept in your "
               "own workspace; other students cannot see them.")
    if note := st.session_state.pop("dpcore.signin_note", None):
        st.info(note, icon=":material/schedule:")
    key = st.session_state.setdefault(_SESSION_KEY, secrets.token_hex(16))
    with st.form("signin"):
        code = st.text_input("Access code", type="password", key="signin.code", max_chars=64)
        submitted = st.form_submit_button("Sign in", type="primary", icon=":material/login:")
    if submitted:
        try:
            member = sign_in(cf, code or "", key, _limiter(cf))
        except SignInError as exc:
            st.error(str(exc), icon=":material/lock:")
            return
        st.session_state.pop("signin.code", None)
        st.session_state[SESSION] = new_session(cf, member)
        st.rerun()
