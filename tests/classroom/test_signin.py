"""Signing in: right and wrong codes, rate limits per session, per member and for the server, expiry."""
from __future__ import annotations

import pytest

from dpcore.classroom import RateLimiter, SignInError
from dpcore.classroom.classfile import create_class, parse_class
from dpcore.classroom.signin import new_session, sign_in

CHEAP = {"name": "scrypt", "n": 2**10, "r": 8, "p": 1}


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


@pytest.fixture(scope="module")
def klass():
    doc, codes = create_class("DP 101", 3, kdf=CHEAP)
    doc.update(max_wrong=3, max_wrong_global=5, window_seconds=60, session_hours=1)
    return parse_class(doc), codes


def test_right_code_signs_in_wrong_code_is_one_line(klass):
    cf, codes = klass
    limiter = RateLimiter(cf.window_seconds, Clock())
    assert sign_in(cf, codes["student-02"], "s1", limiter).name == "student-02"
    with pytest.raises(SignInError, match="not right") as info:
        sign_in(cf, "02-AAAA-BBBB-CCCC-DDDD", "s1", limiter)
    assert "\n" not in str(info.value)


def test_wrong_codes_in_one_session_make_it_wait_even_with_the_right_code(klass):
    cf, codes = klass
    clock = Clock()
    limiter = RateLimiter(cf.window_seconds, clock)
    for i in range(cf.max_wrong):
        with pytest.raises(SignInError, match="not right"):
            sign_in(cf, f"0{i + 1}-WRONG", "attacker", limiter)
    with pytest.raises(SignInError, match="wait 60 s"):
        sign_in(cf, codes["student-01"], "attacker", limiter)  # guessing right does not skip the wait
    assert sign_in(cf, codes["student-01"], "someone-else", limiter).name == "student-01"
    clock.t += 61
    assert sign_in(cf, codes["student-01"], "attacker", limiter).name == "student-01"


def test_guessing_one_member_from_many_sessions_is_limited_per_member(klass):
    cf, codes = klass
    limiter = RateLimiter(cf.window_seconds, Clock())
    for i in range(cf.max_wrong):  # a new browser session per guess
        with pytest.raises(SignInError, match="not right"):
            sign_in(cf, "03-GUESS", f"session-{i}", limiter)
    with pytest.raises(SignInError, match="wait"):
        sign_in(cf, codes["student-03"], "fresh", limiter)
    assert sign_in(cf, codes["student-02"], "fresh", limiter).name == "student-02"


def test_many_wrong_codes_across_the_server_make_everyone_wait(klass):
    cf, codes = klass
    clock = Clock()
    limiter = RateLimiter(cf.window_seconds, clock)
    for i in range(cf.max_wrong_global):  # spread over sessions and IDs: each under its own limit
        with pytest.raises(SignInError, match="not right"):
            sign_in(cf, f"{i:02d}-GUESS", f"s{i}", limiter)
    with pytest.raises(SignInError, match="wait"):
        sign_in(cf, codes["lecturer"], "new", limiter)
    clock.t += 60.5
    assert sign_in(cf, codes["lecturer"], "new", limiter).is_lecturer


def test_a_session_expires_and_ends_when_the_class_file_is_recreated(klass):
    cf, codes = klass
    member = sign_in(cf, codes["student-01"], "s", RateLimiter(60, Clock()))
    session = new_session(cf, member, now=0.0)
    assert session.valid(cf, now=3599.0) and not session.valid(cf, now=3601.0)
    assert not session.valid(None, now=1.0)
    other = parse_class(create_class("DP 101", 3, kdf=CHEAP)[0])  # --force: new codes, same names
    assert not session.valid(other, now=1.0)
