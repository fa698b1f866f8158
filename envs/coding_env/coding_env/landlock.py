"""The sandbox's filesystem view: a Landlock ruleset decided here, on the trusted side.

Why Landlock: it is the one file-access control an unprivileged process can apply to itself in
every mode the project ships (root, non-root, inside the hardened container: the engines'
default seccomp profiles allow it), so a run under the server's own uid still cannot read the
server's files. The runner applies the rules (``runner._landlock``) after the uid drop and before
the system-call filter; a ruleset can never be loosened afterwards.

What a run may touch, and nothing else:

- read: the Python standard library of the base interpreter (its ``sys.base_prefix``, never a
  virtualenv's ``lib/pythonX.Y``, which holds the install), without ``site-packages`` or
  ``dist-packages``, and the system's shared-library folders (``/lib``, ``/usr/lib``, ... :
  extension modules load their libraries from there) without the Python folders in them; no
  installed package is readable (the task files with their answers are one); ``/dev/null``.
  Landlock grants whole trees, so "a folder without one subfolder" is granted as each of its
  other entries;
- read and write: its own scratch folder (a fresh empty folder per run, made and removed by the
  server; files only: no subfolders, links, FIFOs or sockets), only where the kernel's Landlock
  ABI is 3 or newer (truncation is controlled from ABI 3 on).

Where the kernel has no Landlock (before Linux 5.13, or disabled) ``abi()`` is 0: runs keep the
system-call filter's "no writes at all" and can read what the server's uid can read (the security
page says so).
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import sysconfig
from dataclasses import dataclass
from functools import cache

#: landlock_create_ruleset / add_rule / restrict_self: the same numbers on x86_64 and aarch64
SYS_CREATE_RULESET = 444
_CREATE_RULESET_VERSION = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15

#: the file-system rights each ABI knows (a ruleset must not name rights the kernel lacks)
_HANDLED = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
#: the smallest ABI that can give a run a writable scratch folder safely (TRUNCATE is handled)
SCRATCH_ABI = 3

READ_ONLY_DIR = READ_FILE | READ_DIR
SCRATCH = READ_FILE | WRITE_FILE | READ_DIR | REMOVE_FILE | MAKE_REG | TRUNCATE
LIBRARY_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")


def abi() -> int:
    """The kernel's Landlock ABI version, or 0 where Landlock is missing or disabled."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(
            SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION
        )
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def handled(version: int) -> int:
    """Every file-system right ``version`` can restrict (all of them are, unless granted)."""
    return _HANDLED[max(k for k in _HANDLED if k <= version)]


@dataclass(frozen=True)
class Ruleset:
    """What the runner applies: the rights it restricts and the (path, rights) it grants."""

    handled: int
    rules: tuple[tuple[str, int], ...]

    def as_job(self) -> dict[str, object]:
        return {"handled": self.handled, "rules": [list(r) for r in self.rules]}


#: entries of a granted folder that stay unreadable: where installed packages live
INSTALL_DIRS = ("site-packages", "dist-packages")


def stdlib_dirs() -> list[str]:
    """The base interpreter's standard library folders (a virtualenv's ``platstdlib`` is the
    venv's own ``lib/pythonX.Y``: its ``site-packages`` holds every installed package)."""
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
    return [sysconfig.get_path(name, vars=base) for name in ("stdlib", "platstdlib")]


def _entries(folder: str, skip: tuple[str, ...], skip_prefix: tuple[str, ...] = ()) -> list[str]:
    """Each entry of ``folder`` (real paths) but those named in ``skip`` or starting with one of
    ``skip_prefix``."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        os.path.realpath(os.path.join(folder, name))
        for name in names
        if name not in skip and not name.startswith(skip_prefix)
    ]


@cache
def read_paths() -> tuple[str, ...]:
    """What a run reads: the standard library's entries and the shared-library folders' entries,
    installed packages left out (asked once: ``sysconfig`` and the listings take milliseconds)."""
    stdlib = [os.path.realpath(p) for p in stdlib_dirs() if p and os.path.isdir(p)]
    paths: list[str] = []
    for folder in dict.fromkeys(stdlib):
        paths += _entries(folder, INSTALL_DIRS)
    for folder in LIBRARY_DIRS:
        if os.path.isdir(folder):  # python3.X folders: the standard library is granted above
            paths += _entries(folder, INSTALL_DIRS, ("python",))
    seen: list[str] = []
    for path in paths:
        if os.path.exists(path) and path not in seen and not _inside_install(path):
            seen.append(path)
    return tuple(seen)


@cache
def _read_rules() -> tuple[tuple[str, int], ...]:
    """``read_paths`` with their rights (a file takes file rights only), decided once."""
    return tuple(
        (path, READ_ONLY_DIR if os.path.isdir(path) else READ_FILE) for path in read_paths()
    )


def _inside_install(path: str) -> bool:
    """True for a path in a ``site-packages``/``dist-packages`` folder (a symlinked entry)."""
    return any(part in INSTALL_DIRS for part in path.split(os.sep))


def ruleset(version: int, scratch: str | None) -> Ruleset:
    """The rules for one run; ``scratch`` only with ``version >= SCRATCH_ABI``."""
    if version < 1:
        raise ValueError("Landlock is not available (ABI 0)")
    if scratch is not None and version < SCRATCH_ABI:
        raise ValueError(f"a writable scratch folder needs Landlock ABI {SCRATCH_ABI}+")
    mask = handled(version)
    rules = list(_read_rules())
    rules.append(("/dev/null", (READ_FILE | WRITE_FILE) & mask))
    if scratch is not None:
        rules.append((scratch, SCRATCH & mask))
    return Ruleset(mask, tuple(rules))
