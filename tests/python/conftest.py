"""What every test of this suite shares, set up by pytest itself: a /dev/shm of the run's own, the `browser`
fixture, and the `serial` mark.

A /dev/shm of this run's own: live channels are named by user and pid in /dev/shm, and the tests that look at
what is there (test_top, test_live_channel, test_live_browser: a channel made, gone, or removed by `top --list`)
would otherwise see the channels of every other run of the suite beside them (another checkout, another
Python's venv, CI jobs on one machine) come and go, or have their own removed by another run's `top`. As root,
pytest moves into a mount namespace of its own, before any test, with a fresh tmpfs on /dev/shm that every
program it starts shares. Under pytest-xdist each worker is a pytest of its own and does the same, so the tests
of one worker never see the channels of another's. Where that cannot be had (not root, no CAP_SYS_ADMIN, threads
already running), the run uses the machine's /dev/shm and its header says so.

`serial`: a test that needs the machine to itself (it loads every core, or waits on a system-wide resource) is
left out of the parallel run (`-m "not serial"`) and run after it, alone (`-m serial`): see the Makefile's
test-python."""

import ctypes
import os

import pytest

from browser import ARGUMENTS, CHROMIUM

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000

_isolated = None


def _private_dev_shm():
    """None once this process has a /dev/shm of its own; else why not."""
    if os.geteuid() != 0:
        return "not root"
    libc = ctypes.CDLL(None, use_errno=True)
    # unshare first: until the mounts below succeed, the new namespace holds the same mounts as before.
    steps = [
        ("unshare", lambda: libc.unshare(CLONE_NEWNS)),
        ("mount --make-rprivate /", lambda: libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)),
        (
            "mount tmpfs /dev/shm",
            lambda: libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=1777"),
        ),
    ]
    for what, step in steps:
        if step() != 0:
            return f"{what}: {os.strerror(ctypes.get_errno())}"
    return None


def pytest_configure(config):
    global _isolated
    _isolated = _private_dev_shm()


def pytest_report_header(config):
    return "/dev/shm: " + (
        "this run's own (a mount namespace)"
        if _isolated is None
        else f"the machine's, shared with other runs ({_isolated})"
    )


# Per module, as two Playwright instances cannot run at once in one process.
@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, headless, launched by Playwright."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (make test installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGUMENTS)
        yield chromium
        chromium.close()
