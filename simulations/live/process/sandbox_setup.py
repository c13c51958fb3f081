"""The sandbox's own processes: the namespaces unshared, pid 1's setup, and the program run
in them as the agent's user, without capabilities.

Scope
    Run as a file, standard library only (it imports nothing of the project):
    ``python -I -S sandbox_setup.py PORT SOCKET [--rw DIR]… [--ro PATH]… [--userns] -- ARGV``,
    the command ``simulations.live.process.sandbox.wrap`` gives (whose text says what the
    sandbox is, what it covers and what not; it imports this module only for its path and
    ``AGENT_UID``). ``main`` makes the sandbox and runs ``ARGV`` in
    it; a setup that fails is one line on stderr (``SandboxError``, "sandbox: …") and exit
    126. ``AGENT_UID``/``AGENT_GID`` are the user the program runs as under root.

Abstractions
    Three processes. ``sandbox.wrap``'s command starts this file (``python -I -S``: standard
    library only, ``ctypes`` for the calls Python lacks); it ``unshare``s the namespaces (and,
    without root, writes its uid and gid maps), forks the namespace's pid 1 and waits for it,
    passing on SIGTERM, SIGINT and SIGHUP, then exits as the program did (its exit code, or the
    signal that ended it: pid 1 tells it over a pipe). Each has ``PR_SET_PDEATHSIG`` SIGKILL:
    when its parent goes, it goes, and with pid 1 the namespace. Pid 1 does the setup
    ``sandbox``'s text lists, drops its own capability sets, forks the program (which becomes
    the agent's uid, enters its working directory through the new mounts and ``exec``s), and
    reaps: when the program exits, every process left gets SIGTERM, ``GRACE`` seconds, and pid 1
    exits (the kernel kills the rest). It lets go of stdin and stdout (the program's closing
    them shows).

    What the program needs to read is checked before it starts, as it: its command, ``readable``
    (``--ro``), its working directory, this Python, and every absolute path among its arguments
    (whole, or after ``NAME=``) outside the fresh tmpfs; one that is not readable is a one-line
    error naming the folder that is not world-readable (exit 126; a setup that fails is one line
    and 126 too). As root, a folder on the way that the agent's uid cannot traverse (``/root``
    0700 holding the project's Python) is covered with an empty tmpfs holding only the entries
    on the way (read-only): the rest of it stays out of sight. A path under one of the fresh
    tmpfs (a test's folder in ``/tmp``) is mounted back at its own path where it is writable,
    ``readable``, the command, the working directory or a regular file its command line names
    (read-only) — a folder or a host socket named there stays out of reach. A file system that
    refuses idmapped mounts: one line on stderr, and the folder is writable as its modes say.

Source
    Linux namespaces(7), pid_namespaces(7) (pid 1's end kills the namespace),
    user_namespaces(7), capabilities(7), mount_setattr(2) (``MOUNT_ATTR_IDMAP``),
    open_tree(2), move_mount(2), prctl(2); bubblewrap (``--unshare-all``, ``--ro-bind / /``,
    ``--tmpfs``, ``--die-with-parent``, ``--cap-drop ALL``, pid 1 that reaps); util-linux
    ``unshare --net --mount --pid --fork --kill-child --mount-proc`` and ``setpriv --reuid
    --regid --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs`` (the same
    calls, from here).
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing is not imported: it costs an agent's every start
if TYPE_CHECKING:
    import _socket
    import ctypes
    import signal
    from collections.abc import Sequence
else:  # the C modules: the same calls without enum (a third of the start-up)
    import _signal as signal

AGENT_UID = AGENT_GID = 65530  # systemd leaves 65520–65533 unallocated
GRACE = 0.5  # seconds what the program left gets between SIGTERM and pid 1's end (SIGKILL)
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")  # fresh tmpfs, mode 1777
PRIVATE_RUN = ("/run",)  # fresh tmpfs, mode 0755 (the host's sockets live there)
FORWARD = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_BUFFER = 65536
_HERE = os.path.abspath(__file__)
_OWN = "/run/.acp-sandbox"  # pid 1's own files (resolv.conf, passwd, group), root's, read-only

# linux/sched.h, linux/mount.h, linux/prctl.h, linux/capability.h, linux/sockios.h
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 0x4000, 1 << 18
AT_FDCWD, AT_EMPTY_PATH, AT_RECURSIVE = -100, 0x1000, 0x8000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC, MOVE_MOUNT_F_EMPTY_PATH = 1, 0o2000000, 4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_IDMAP = 1, 0x100000
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442  # one number on every arch
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 1
_CAPS_V3 = 0x20080522


class SandboxError(Exception):
    """The sandbox cannot be set up; the message is the one line printed."""


# ---- system calls ------------------------------------------------------------------------------


def _libc() -> ctypes.CDLL:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _check(result: int, what: str) -> int:
    if result < 0:
        import ctypes

        err = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(err)}")
    return result


def _mount_attr(libc: ctypes.CDLL, fd: int, path: bytes, flags: int, attr: int, ns: int = 0) -> int:
    import ctypes

    class MountAttr(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint64) for n in ("set", "clr", "propagation", "userns")]

    a = MountAttr(attr, 0, 0, ns)
    return int(libc.syscall(SYS_MOUNT_SETATTR, fd, path, flags, ctypes.byref(a), ctypes.sizeof(a)))


def _drop_capability_sets(libc: ctypes.CDLL) -> None:
    """No new privileges, empty bounding and ambient sets, no inheritable capability: what
    pid 1 keeps (its effective set) ends at the program's ``exec``, root or not."""
    import ctypes

    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "dropping the bounding set")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL before Linux 4.3
    header = (ctypes.c_uint32 * 2)(_CAPS_V3, 0)
    data = (ctypes.c_uint32 * 6)()  # two of {effective, permitted, inheritable}
    _check(libc.capget(header, data), "capget")
    data[2] = data[5] = 0
    _check(libc.capset(header, data), "clearing the inheritable set")


def _die_with_parent(libc: ctypes.CDLL, life: int | None = None) -> None:
    """SIGKILL when the parent goes; gone already (``life``'s other end closed): exit now."""
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if life is not None:
        import select

        if select.select([life], [], [], 0)[0]:
            os._exit(1)


# ---- the outer process: unshare, fork pid 1, pass its end on ------------------------------------


def _outer(opts: _Options) -> int:
    libc = _libc()
    parent = os.getppid()
    _die_with_parent(libc)
    if os.getppid() != parent:  # the parent went before the call
        return 1
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if opts.userns:
        flags |= CLONE_NEWUSER
    _check(libc.unshare(flags), "unshare")
    if opts.userns:
        _write("/proc/self/setgroups", "deny\n")
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    status_r, status_w = os.pipe()
    life_r, life_w = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(status_r)
        os.close(life_w)
        try:
            os._exit(_init(opts, libc, life_r, status_w))
        except SandboxError as e:
            os.write(2, f"sandbox: {e}\n".encode())
            os._exit(126)
        except BaseException as e:  # pid 1 ends in one line, whatever it was
            os.write(2, f"sandbox: {type(e).__name__}: {e}\n".encode())
            os._exit(126)
    os.close(status_w)
    os.close(life_r)
    _let_go_of_stdio()
    for sig in FORWARD:
        signal.signal(sig, lambda signum, _f: _send(init, signum))
    _, st = os.waitpid(init, 0)
    told = os.read(status_r, 64)
    if told.strip().lstrip(b"-").isdigit():
        st = int(told)
    _exit_as(st)
    return 1


def _send(pid: int, sig: int) -> None:
    try:  # noqa: SIM105 - contextlib costs every start 3 ms
        os.kill(pid, sig)
    except OSError:
        pass


def _let_go_of_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def _exit_as(st: int) -> None:
    if os.WIFSIGNALED(st):
        sig = os.WTERMSIG(st)
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 1)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    except OSError as e:
        raise SandboxError(f"{path}: {e.strerror}") from None
    finally:
        os.close(fd)


# ---- pid 1 -------------------------------------------------------------------------------------


class _Options:
    def __init__(self, args: list[str]) -> None:
        if len(args) < 4 or "--" not in args[2:]:
            raise ValueError("usage")
        self.port, self.socket_path = int(args[0]), args[1]
        cut = args.index("--", 2)
        self.writable: list[str] = []
        self.readable: list[str] = []
        self.userns = False
        opts = args[2:cut]
        while opts:
            word = opts.pop(0)
            if word == "--userns":
                self.userns = True
            elif word in ("--rw", "--ro") and opts:
                (self.writable if word == "--rw" else self.readable).append(opts.pop(0))
            else:
                raise ValueError("usage")
        self.argv = args[cut + 1 :]
        if not self.argv:
            raise ValueError("usage")


def _init(opts: _Options, libc: ctypes.CDLL, life: int, status_w: int) -> int:
    _die_with_parent(libc, life)
    root = not opts.userns
    uid, gid = (AGENT_UID, AGENT_GID) if root else (os.getuid(), os.getgid())
    cwd = os.getcwd()
    env = dict(os.environ)
    program = _find(opts.argv[0], env.get("PATH", os.defpath))
    writable = [_real(p, cwd, "writable folder") for p in opts.writable]
    needed = _needed(opts, program, cwd)
    relay_dir = _mounts(libc, opts, root, uid, gid, writable, needed)
    _passwd_and_resolv(root, uid, gid, env)
    _loopback_up(libc)
    server = _listen(opts.port) if opts.port else None
    _drop_capability_sets(libc)
    tmp = os.path.realpath(env.get("TMPDIR") or "/tmp")
    if not (_inside(tmp, writable) or tmp in PRIVATE_TMP):
        env["TMPDIR"] = "/tmp"  # a temporary folder the program could not write: its own
    child = os.fork()
    if child == 0:
        _become(opts.argv, program, env, cwd, uid, gid, root, needed)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its /proc/1 is nobody's to open
    _let_go_of_stdio()
    if server is not None and relay_dir is not None:
        import _thread

        name = os.path.basename(opts.socket_path)
        _thread.start_new_thread(_relay, (server, f"/proc/self/fd/{relay_dir}/{name}"))
    for sig in FORWARD:
        signal.signal(sig, lambda signum, _f: _send(child, signum))
    status = _reap_until(child)
    _send(-1, signal.SIGTERM)  # what the program left: SIGTERM, a grace, then the kernel
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and _reap_one():
        time.sleep(0.01)
    os.write(status_w, str(status).encode())
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _reap_until(child: int) -> int:
    while True:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1 << 8
        if pid == child:
            return st


def _reap_one() -> bool:
    """Reap what exited; False once no process is left."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        return False
    return True


def _real(path: str, cwd: str, what: str) -> str:
    full = os.path.realpath(os.path.join(cwd, path))
    if not os.path.isdir(full):
        raise SandboxError(f"{what} {path!r}: not a directory")
    return full


def _find(command: str, path: str) -> str:
    """``command`` as ``execvp`` finds it (the caller's view, as root)."""
    if "/" in command:
        return command
    for d in path.split(os.pathsep):
        candidate = os.path.join(d or ".", command)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return command


def _needed(opts: _Options, program: str, cwd: str) -> list[str]:
    """The real paths of what the program must read: its command, ``--ro``, its working
    directory, this Python (the project's agents run on it), and the absolute paths among its
    arguments (whole, or after ``NAME=``) that are files or folders outside the fresh tmpfs,
    or regular files inside them (a script in a test's ``/tmp`` folder, read-only; a host socket
    or a folder there named on its command line stays out of reach). A project cloned under
    ``/tmp`` stays visible: this project's folder, and the virtual environment of the program and
    of this Python (``-S`` leaves ``sys.prefix`` the base one), are named too; so are the venv of
    a script its command line names (a PyPI agent's entry point) and the Python install each of
    those venvs was made with (its ``python`` is a link into it)."""
    private = (*PRIVATE_TMP, *PRIVATE_RUN)
    project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(_HERE))))
    named = [program, *opts.readable, cwd, sys.base_prefix, sys.prefix, project]
    named += [v for v in (_venv(program), _venv(sys.executable)) if v]
    for word in opts.argv[1:]:
        value = word.split("=", 1)[1] if "=" in word and not word.startswith("/") else word
        if not value.startswith("/"):
            continue
        real = os.path.realpath(value)
        if not _inside(real, private) or os.path.isfile(real):
            named.append(value)
    for path in list(named):  # a PyPI agent's venv (its script named) and the Python it is of
        venv = _venv(path) if path.startswith("/") else None
        if venv:
            named += [venv, *[b for b in (_venv_base(venv),) if b]]
    out = {os.path.realpath(p): None for p in named if p.startswith("/")}
    return [p for p in out if os.path.isdir(p) or os.path.isfile(p)]


def _venv(executable: str) -> str | None:
    """The virtual environment ``executable`` (unresolved: a venv's Python is a link out of
    it) lies in, if any."""
    if not executable.startswith("/"):
        return None
    top = os.path.dirname(os.path.dirname(os.path.abspath(executable)))
    return top if os.path.isfile(os.path.join(top, "pyvenv.cfg")) else None


def _venv_base(venv: str) -> str | None:
    """The Python install virtual environment ``venv`` was made with (its ``pyvenv.cfg``'s
    ``home``, that install's ``bin``, names it): a venv's ``python`` is a link into it."""
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as f:
            for line in f:
                key, eq, value = line.partition("=")
                if eq and key.strip() == "home" and value.strip().startswith("/"):
                    return os.path.dirname(value.strip().rstrip("/"))
    except (OSError, ValueError):
        return None
    return None


def _inside(path: str, tops: Sequence[str]) -> bool:
    return any(path == t or path.startswith(t.rstrip("/") + "/") for t in tops)


def _traversable(path: str, uid: int, gid: int) -> bool:
    st = os.stat(path)
    if st.st_uid == uid:
        return bool(st.st_mode & 0o100)
    if st.st_gid == gid:
        return bool(st.st_mode & 0o010)
    return bool(st.st_mode & 0o001)


def _mounts(
    libc: ctypes.CDLL,
    opts: _Options,
    root: bool,
    uid: int,
    gid: int,
    writable: list[str],
    needed: list[str],
) -> int | None:
    """The mount namespace (see the module's text); the relay's folder as an ``O_PATH`` fd."""
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making / private")
    covered = [
        p for p in (*PRIVATE_TMP, *PRIVATE_RUN) if os.path.isdir(p) and not os.path.islink(p)
    ]
    # what the program sees of the host, mounted back: (path, writable), shallow ones first
    back: dict[str, bool] = {}
    masks: dict[str, None] = {}
    for w in writable:
        for c in covered:
            if _inside(c, [w]):
                raise SandboxError(f"writable folder {w}: it holds the host's {c}")
    for real in needed:
        if _inside(real, writable) or any(_inside(c, [real]) for c in covered):
            continue  # writable anyway, or the program's own fresh one (its cwd at /tmp)
        if _inside(real, covered):
            back.setdefault(real, False)
        elif root:  # a folder on the way the agent's uid cannot traverse: an empty tmpfs over it
            parts = real.strip("/").split("/")
            for i in range(len(parts) - 1):
                folder = "/" + "/".join(parts[:i])
                if not _traversable(folder, uid, gid):
                    masks[folder] = None
                    back.setdefault(os.path.join(folder, parts[i]), False)
                    break
    for w in writable:
        back[w] = True
        if root and not _inside(w, covered):
            parts = w.strip("/").split("/")
            for i in range(len(parts) - 1):
                folder = "/" + "/".join(parts[:i])
                if not _traversable(folder, uid, gid):
                    masks[folder] = None
                    break
    relay_dir = None
    if opts.port:
        relay_dir = os.open(os.path.dirname(os.path.abspath(opts.socket_path)), os.O_PATH)
    trees = {}
    for path in back:
        fd = libc.syscall(
            SYS_OPEN_TREE,
            AT_FDCWD,
            path.encode(),
            OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE,
        )
        trees[path] = _check(fd, f"{path}: open_tree (Linux 5.2 or later)")
    ro = _mount_attr(libc, AT_FDCWD, b"/", AT_RECURSIVE, MOUNT_ATTR_RDONLY)
    _check(ro, "mounting / read-only (Linux 5.12 or later)")
    nosuid = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _check(libc.mount(b"proc", b"/proc", b"proc", nosuid, None), "mounting /proc")
    for path, fd in trees.items():
        attr = 0 if back[path] else MOUNT_ATTR_RDONLY
        if attr:
            _check(_mount_attr(libc, fd, b"", AT_EMPTY_PATH | AT_RECURSIVE, attr), path)
        elif root:
            _idmap(libc, fd, path, uid, gid)
    for path in covered:
        mode = b"mode=0755" if path in PRIVATE_RUN else b"mode=1777"
        _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, mode), path)
    for path in masks:
        _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", nosuid, b"mode=0755"), path)
    for path in sorted(trees, key=lambda p: p.count("/")):
        if not os.path.lexists(path):
            if os.path.isdir(f"/proc/self/fd/{trees[path]}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
        moved = libc.syscall(
            SYS_MOVE_MOUNT, trees[path], b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH
        )
        _check(moved, f"{path}: move_mount")
        os.close(trees[path])
    for path in masks:  # nothing more goes into them
        flags = MS_REMOUNT | MS_RDONLY | nosuid
        _check(libc.mount(None, path.encode(), None, flags, None), path)
    os.makedirs(_OWN, mode=0o755, exist_ok=True)
    return relay_dir


def _idmap(libc: ctypes.CDLL, tree: int, path: str, uid: int, gid: int) -> None:
    """The detached mount ``tree`` of the writable folder ``path`` idmapped: its owner on
    disk seen as ``uid``/``gid`` (a user namespace made for the map, by a child); where the
    file system cannot, a line on stderr, and it is writable as its modes say."""
    st = os.stat(path)
    ready_r, ready_w = os.pipe()
    hold_r, hold_w = os.pipe()
    helper = os.fork()
    if helper == 0:
        os.close(ready_r)
        os.close(hold_w)
        ok = libc.unshare(CLONE_NEWUSER) == 0
        os.write(ready_w, b"1" if ok else b"0")
        os.read(hold_r, 1)
        os._exit(0)
    os.close(ready_w)
    os.close(hold_r)
    try:
        if os.read(ready_r, 1) != b"1":
            raise SandboxError("a user namespace for the idmapped mount: refused")
        _write(f"/proc/{helper}/uid_map", f"{st.st_uid} {uid} 1\n")
        _write(f"/proc/{helper}/gid_map", f"{st.st_gid} {gid} 1\n")
        ns = os.open(f"/proc/{helper}/ns/user", os.O_RDONLY)
    finally:
        os.close(hold_w)
        os.close(ready_r)
        os.waitpid(helper, 0)
    try:
        flags = AT_EMPTY_PATH | AT_RECURSIVE
        if _mount_attr(libc, tree, b"", flags, MOUNT_ATTR_IDMAP, ns) < 0:
            import ctypes

            why = os.strerror(ctypes.get_errno())
            os.write(
                2,
                f"sandbox: {path}: no idmapped mount ({why}): writable as its modes say\n".encode(),
            )
    finally:
        os.close(ns)


def _passwd_and_resolv(root: bool, uid: int, gid: int, env: dict[str, str]) -> None:
    """``/etc/resolv.conf`` naming 127.0.0.1; as root, ``/etc/passwd`` and ``/etc/group``
    with the agent's user (a program may look its own name up). Each a file of pid 1's in
    ``_OWN`` mounted read-only over the host's."""
    files = {"/etc/resolv.conf": "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"}
    if root:
        for path, line in (
            ("/etc/passwd", f"acp-agent:x:{uid}:{gid}:ACP agent:{env.get('HOME', '/')}:/bin/sh\n"),
            ("/etc/group", f"acp-agent:x:{gid}:\n"),
        ):
            try:
                with open(path) as f:
                    text = f.read()
            except OSError:
                continue
            if all(e.split(":")[2:3] != [str(uid)] for e in text.splitlines()):
                files[path] = text + ("" if text.endswith("\n") or not text else "\n") + line
    for target, text in files.items():
        real = os.path.realpath(target)
        if not os.path.lexists(real):  # a symlink into a fresh tmpfs (systemd-resolved's)
            if not _inside(real, (*PRIVATE_TMP, *PRIVATE_RUN)):
                continue
            os.makedirs(os.path.dirname(real), exist_ok=True)
        mine = os.path.join(_OWN, os.path.basename(target))
        with open(mine, "w") as f:
            f.write(text)
        os.chmod(mine, 0o644)
        if not os.path.exists(real):
            os.symlink(mine, real)
            continue
        libc = _libc()
        _check(libc.mount(mine.encode(), real.encode(), None, MS_BIND, None), target)
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        _check(libc.mount(None, real.encode(), None, flags, None), target)


def _loopback_up(libc: ctypes.CDLL) -> None:
    import _socket
    import ctypes

    s = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        req = ctypes.create_string_buffer(b"lo", 40)  # struct ifreq: name, then the flags
        _check(libc.ioctl(s.fileno(), SIOCGIFFLAGS, req), "loopback")
        flags = ctypes.c_short.from_buffer(req, 16)
        flags.value |= IFF_UP
        _check(libc.ioctl(s.fileno(), SIOCSIFFLAGS, req), "bringing loopback up")
    finally:
        s.close()


def _listen(port: int) -> _socket.socket:
    import _socket

    server = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    server.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(64)
    return server


def _pipe(src: _socket.socket, dst: _socket.socket) -> None:
    import _socket

    try:
        while data := src.recv(_BUFFER):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:  # noqa: SIM105 - contextlib costs every start 3 ms
                s.shutdown(_socket.SHUT_RDWR)
            except OSError:
                pass


def _relay(server: _socket.socket, target: str) -> None:
    """127.0.0.1:``port`` → the Unix socket (reached through pid 1's fd of its folder, which
    no mount inside hides), one pair of threads per connection."""
    import _socket
    import _thread

    while True:
        fd, _ = server._accept()  # type: ignore[attr-defined]  # the C socket's accept
        client = _socket.socket(fileno=fd)
        upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            upstream.connect(target)
        except OSError:
            client.close()
            upstream.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            _thread.start_new_thread(_pipe, (a, b))


# ---- the program -------------------------------------------------------------------------------


def _become(
    argv: list[str],
    program: str,
    env: dict[str, str],
    cwd: str,
    uid: int,
    gid: int,
    root: bool,
    needed: list[str],
) -> None:
    """In the forked child: the agent's user, its working directory, then ``exec``."""
    import stat

    try:
        for sig in (*FORWARD, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        if root:
            for fd in (0, 1, 2):  # its pipes its own (``/dev/stdout`` reopens them)
                try:
                    if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):
                        os.fchown(fd, uid, gid)
                except OSError:
                    pass
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        for path in needed:
            if not os.access(path, os.R_OK | (os.X_OK if os.path.isdir(path) else 0)):
                raise SandboxError(_unreadable(path, uid))
        try:
            os.chdir(cwd)  # through the new mounts, not the host's folder it was started in
        except OSError as e:
            raise SandboxError(f"cannot enter the working directory {cwd}: {e.strerror}") from None
        try:
            os.execve(program, argv, env) if "/" in program else os.execvpe(program, argv, env)
        except OSError as e:
            raise SandboxError(f"cannot start {argv[0]!r} as uid {uid}: {e.strerror}") from None
    except SandboxError as e:
        os.write(2, f"sandbox: {e}\n".encode())
        os._exit(126 if "cannot start" not in str(e) else 127)
    except BaseException as e:  # the child never returns into pid 1's code
        os.write(2, f"sandbox: {type(e).__name__}: {e}\n".encode())
        os._exit(126)


def _unreadable(path: str, uid: int) -> str:
    parts = path.rstrip("/").split("/")
    for i in range(2, len(parts)):
        folder = "/".join(parts[:i])
        if not os.access(folder, os.X_OK):
            return (
                f"{path} is not readable by the sandbox's user (uid {uid}): {folder} is not "
                "world-readable (chmod o+rx it, or keep the agent elsewhere)"
            )
    return f"{path} is not readable by the sandbox's user (uid {uid}) (chmod o+r it)"


def main(args: list[str]) -> int:
    try:
        opts = _Options(args)
    except ValueError:
        print(
            "usage: sandbox_setup.py PORT SOCKET [--rw DIR]... [--ro PATH]... [--userns]"
            " -- CMD ...",
            file=sys.stderr,
        )
        return 2
    try:
        return _outer(opts)
    except SandboxError as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 126


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
