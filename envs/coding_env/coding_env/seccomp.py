"""The sandbox's system-call filter: a seccomp-BPF program built here, on the trusted side.

Why seccomp and not a namespace sandbox (bubblewrap) or a uid helper: it is the one mechanism
that works in every mode the project ships. A container started with all capabilities dropped
and no-new-privileges cannot create user namespaces under the engines' default seccomp profile,
cannot switch uid and cannot run a setuid helper, but it can always add a stricter filter to
itself. The filter is installed by the runner (after ``PR_SET_NO_NEW_PRIVS``) before the
submission is loaded, and a filter can never be removed, so the submission runs under it.

What it refuses (``EPERM`` unless noted), so that a submission shares nothing with the server or
another session even when it runs under the server's uid:

- sockets of every family (``socket``, ``socketpair``, ``io_uring_setup``);
- new processes (``fork``, ``vfork``, ``clone`` without ``CLONE_THREAD``; ``clone3`` gets
  ``ENOSYS`` so the C library falls back to ``clone`` for threads) and ``execve``: one process
  per run, so killing it leaves nothing behind;
- signals to any process but itself (``kill``/``tgkill`` to another pid, ``tkill``, queued
  signals, pidfds, ``F_SETOWN``/``F_SETSIG``/``FIOSETOWN``-style I/O signal targets);
- reading or writing other processes (``ptrace``, ``process_vm_*``);
- writing the filesystem (any ``open`` for writing, creating, truncating or appending; rename,
  unlink, mkdir, links, mknod, chmod, chown, truncate, xattrs; ``memfd_create``), and memory that
  outlives the process (System V shared memory, semaphores, message queues, POSIX queues);
- namespaces, mounts, BPF, perf events, userfaultfd;
- other processes' resources (``prlimit64`` on any pid but its own, priorities, CPU sets, NUMA
  moves): a run under the server's uid could otherwise lower the server's or a neighbour's
  limits; kernel keyrings (``add_key``, ``keyctl``, ``request_key``: they outlive the process
  and are shared by its uid); ``inotify``/``fanotify`` (they show other runs' file names);
  file times (``utime*``); ``name_to_handle_at``;
- files without a name: ``O_TMPFILE`` fails with ``EOPNOTSUPP`` (Python's ``tempfile`` falls back
  to a named file) and, in the scratch folder, ``unlink`` succeeds without removing the file, so
  every byte a run holds has a name the scratch bound counts (the server removes the folder).

With ``scratch=True`` (the run has a scratch folder and a Landlock ruleset that confines every
write to it, ``coding_env.landlock``) opening files for writing, creating, removing, renaming
and truncating them is left to Landlock; everything else above stays refused.

Any system call from another ABI (i386 ``int 0x80``, x32) kills the process. Architectures:
x86_64 and aarch64; on any other one ``build_filter`` raises and the run is refused.
"""

from __future__ import annotations

import errno
import os
import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

# fmt: off
_NR = {
    "x86_64": dict(
        socket=41, socketpair=53, io_uring_setup=425, clone=56, fork=57, vfork=58, clone3=435,
        execve=59, execveat=322, kill=62, tgkill=234, tkill=200, rt_sigqueueinfo=129,
        rt_tgsigqueueinfo=297, pidfd_send_signal=424, pidfd_open=434, pidfd_getfd=438,
        ptrace=101, process_vm_readv=310, process_vm_writev=311, open=2, openat=257, openat2=437,
        creat=85, open_by_handle_at=304, rename=82, renameat=264, renameat2=316, mkdir=83,
        mkdirat=258, rmdir=84, link=86, linkat=265, symlink=88, symlinkat=266, unlink=87,
        unlinkat=263, mknod=133, mknodat=259, chmod=90, fchmod=91, fchmodat=268, fchmodat2=452,
        chown=92, fchown=93, lchown=94, fchownat=260, truncate=76, ftruncate=77, setxattr=188,
        lsetxattr=189, fsetxattr=190, removexattr=197, lremovexattr=198, fremovexattr=199,
        memfd_create=319, shmget=29, semget=64, msgget=68, mq_open=240, unshare=272, setns=308,
        mount=165, umount2=166, bpf=321, perf_event_open=298, userfaultfd=323, fcntl=72,
        ioctl=16, prlimit64=302, setpriority=141, ioprio_set=251, sched_setaffinity=203,
        sched_setscheduler=144, sched_setparam=142, sched_setattr=314, migrate_pages=256,
        move_pages=279, kcmp=312, process_madvise=440, process_mrelease=448, get_robust_list=274,
        add_key=248, request_key=249, keyctl=250, inotify_init=253, inotify_init1=294,
        inotify_add_watch=254, fanotify_init=300, fanotify_mark=301, utime=132, utimes=235,
        futimesat=261, utimensat=280, name_to_handle_at=303,
    ),
    "aarch64": dict(
        socket=198, socketpair=199, io_uring_setup=425, clone=220, clone3=435, execve=221,
        execveat=281, kill=129, tgkill=131, tkill=130, rt_sigqueueinfo=138,
        rt_tgsigqueueinfo=240, pidfd_send_signal=424, pidfd_open=434, pidfd_getfd=438,
        ptrace=117, process_vm_readv=270, process_vm_writev=271, openat=56, openat2=437,
        open_by_handle_at=265, renameat=38, renameat2=276, mkdirat=34, linkat=37, symlinkat=36,
        unlinkat=35, mknodat=33, fchmod=52, fchmodat=53, fchmodat2=452, fchown=55, fchownat=54,
        truncate=45, ftruncate=46, setxattr=5, lsetxattr=6, fsetxattr=7, removexattr=14,
        lremovexattr=15, fremovexattr=16, memfd_create=279, shmget=194, semget=190, msgget=186,
        mq_open=180, unshare=97, setns=268, mount=40, umount2=39, bpf=280, perf_event_open=241,
        userfaultfd=282, fcntl=25, ioctl=29, prlimit64=261, setpriority=140, ioprio_set=30,
        sched_setaffinity=122, sched_setscheduler=119, sched_setparam=118, sched_setattr=274,
        migrate_pages=238, move_pages=239, kcmp=272, process_madvise=440, process_mrelease=448,
        get_robust_list=100, add_key=217, request_key=218, keyctl=219, inotify_init1=26,
        inotify_add_watch=27, fanotify_init=262, fanotify_mark=263, utimensat=88,
        name_to_handle_at=264,
    ),
}
# fmt: on

_DENY = (
    "socket socketpair io_uring_setup fork vfork execve execveat tkill rt_sigqueueinfo "
    "rt_tgsigqueueinfo pidfd_send_signal pidfd_open pidfd_getfd ptrace process_vm_readv "
    "process_vm_writev creat open_by_handle_at rename renameat renameat2 mkdir mkdirat rmdir link "
    "linkat symlink symlinkat unlink unlinkat mknod mknodat chmod fchmod fchmodat fchmodat2 chown "
    "fchown lchown fchownat truncate ftruncate setxattr lsetxattr fsetxattr removexattr "
    "lremovexattr fremovexattr memfd_create shmget semget msgget mq_open unshare setns mount "
    "umount2 bpf perf_event_open userfaultfd "
    # other processes' resources: a run under the server's uid (non-root, container) could lower
    # the server's or a neighbour's limits, priority or CPU set (prlimit64 is allowed on itself)
    "setpriority ioprio_set sched_setaffinity sched_setscheduler sched_setparam sched_setattr "
    "migrate_pages move_pages kcmp process_madvise process_mrelease get_robust_list "
    # kernel keyrings outlive the process and are shared by its uid
    "add_key request_key keyctl "
    # file-change watches show other runs' file names; a file's times are not a grader's business
    "inotify_init inotify_init1 inotify_add_watch fanotify_init fanotify_mark "
    "utime utimes futimesat utimensat name_to_handle_at"
).split()
#: left to Landlock when the run has a scratch folder (it confines them to that folder)
_SCRATCH_CALLS = frozenset(
    "creat unlink unlinkat rename renameat renameat2 truncate ftruncate".split()
)
_ENOSYS = ("clone3", "openat2")  # the C library falls back to clone / openat
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CLONE_THREAD = 0x00010000
#: ``O_TMPFILE`` without ``O_DIRECTORY`` (the same bit on x86_64 and aarch64): a file with no
#: name, which the scratch bound could not see
_O_TMPFILE_BIT = 0o20000000
#: unlink in the scratch folder succeeds without removing: every byte a run holds keeps a name
_KEPT = ("unlink", "unlinkat")
_F_SETOWN, _F_SETSIG, _F_SETOWN_EX = 8, 10, 15
_FIOSETOWN, _SIOCSPGRP = 0x8901, 0x8902

# BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h)
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW, _ERRNO, _KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_X32_BIT = 0x40000000


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg(i: int) -> int:
    """Offset of the low 32 bits of argument ``i`` in ``struct seccomp_data`` (little-endian)."""
    return 16 + 8 * i


def _deny_if_arg(
    nr: int, arg: int, values: tuple[int, ...] = (), mask: int = 0, err: int = errno.EPERM
) -> list[bytes]:
    """``nr`` fails with ``err`` when argument ``arg`` is one of ``values`` or has a ``mask``
    bit."""
    kinds = [(_JSET, mask)] if mask else [(_JEQ, v) for v in values]
    n = len(kinds)
    body = [_ins(_JEQ, nr, 0, n + 3), _ins(_LD_ABS, _arg(arg))]
    for i, (code, k) in enumerate(kinds):  # a match jumps to the RET, the last miss past it
        body.append(_ins(code, k, n - 1 - i, 1 if i == n - 1 else 0))
    body += [_ins(_RET, _ERRNO | err), _ins(_LD_ABS, 0)]
    return body


def _allow_only_arg(nr: int, arg: int, *values: int) -> list[bytes]:
    """``nr`` fails with EPERM unless argument ``arg`` is one of ``values``."""
    n = len(values)
    body = [_ins(_JEQ, nr, 0, n + 3), _ins(_LD_ABS, _arg(arg))]
    for i, value in enumerate(values):  # a match jumps past the RET
        body.append(_ins(_JEQ, value, n - i, 0))
    return body + [_ins(_RET, _ERRNO | errno.EPERM), _ins(_LD_ABS, 0)]


def _deny_unless_mask(nr: int, arg: int, mask: int) -> list[bytes]:
    """``nr`` fails with EPERM unless argument ``arg`` has a ``mask`` bit (clone without threads)."""
    return [
        _ins(_JEQ, nr, 0, 4),
        _ins(_LD_ABS, _arg(arg)),
        _ins(_JSET, mask, 1, 0),
        _ins(_RET, _ERRNO | errno.EPERM),
        _ins(_LD_ABS, 0),
    ]


def build_filter(pid: int, machine: str | None = None, scratch: bool = False) -> bytes:
    """The filter for the runner process ``pid`` (the only process it may signal), as raw
    ``struct sock_filter`` records; ``scratch``: file writes are Landlock's to confine. Raises
    ``RuntimeError`` on an unsupported architecture."""
    machine = machine or platform.machine()
    if machine not in _NR:
        raise RuntimeError(
            f"the coding sandbox's system-call filter supports {', '.join(_NR)}, not {machine}"
        )
    nr = _NR[machine]
    prog = [_ins(_LD_ABS, 4), _ins(_JEQ, AUDIT_ARCH[machine], 1, 0), _ins(_RET, _KILL_PROCESS)]
    prog.append(_ins(_LD_ABS, 0))
    if machine == "x86_64":
        prog += [_ins(_JGE, _X32_BIT, 0, 1), _ins(_RET, _KILL_PROCESS)]
    for name in _DENY:
        if name in nr and not (scratch and name in _SCRATCH_CALLS):
            prog += [_ins(_JEQ, nr[name], 0, 1), _ins(_RET, _ERRNO | errno.EPERM)]
    if scratch:
        for name in _KEPT:
            if name in nr:
                prog += [_ins(_JEQ, nr[name], 0, 1), _ins(_RET, _ERRNO | 0)]
    for name in _ENOSYS:
        prog += [_ins(_JEQ, nr[name], 0, 1), _ins(_RET, _ERRNO | errno.ENOSYS)]
    prog += _deny_unless_mask(nr["clone"], 0, _CLONE_THREAD)
    prog += _allow_only_arg(nr["kill"], 0, pid)
    prog += _allow_only_arg(nr["tgkill"], 0, pid)
    prog += _allow_only_arg(nr["prlimit64"], 0, 0, pid)  # its own limits only
    if not scratch:
        if "open" in nr:
            prog += _deny_if_arg(nr["open"], 1, mask=_WRITE_FLAGS)
        prog += _deny_if_arg(nr["openat"], 2, mask=_WRITE_FLAGS)
    if "open" in nr:
        prog += _deny_if_arg(nr["open"], 1, mask=_O_TMPFILE_BIT, err=errno.EOPNOTSUPP)
    prog += _deny_if_arg(nr["openat"], 2, mask=_O_TMPFILE_BIT, err=errno.EOPNOTSUPP)
    prog += _deny_if_arg(nr["fcntl"], 1, (_F_SETOWN, _F_SETSIG, _F_SETOWN_EX))
    prog += _deny_if_arg(nr["ioctl"], 1, (_FIOSETOWN, _SIOCSPGRP))
    prog.append(_ins(_RET, _ALLOW))
    if len(prog) > 4096:  # BPF_MAXINSNS
        raise RuntimeError("the coding sandbox's filter is too long")
    return b"".join(prog)
