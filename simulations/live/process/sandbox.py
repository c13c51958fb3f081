"""An agent process contained: no capability over the host's namespaces, offline, read-only but
for its own folders, and ended with every process it started — by the kernel, not by us.

Scope
    ``wrap(argv, port, socket_path, *, writable=None, readable=(), userns=None)`` gives the
    command that runs ``argv`` in a sandbox, where one can be made here (``available()``;
    ``note()`` says in one line which sandbox, and what it covers). ``port`` > 0: inside,
    127.0.0.1:``port`` is relayed to the Unix socket ``socket_path`` (the model endpoint: its
    URL is the same inside). ``writable``: the folders the program may write, besides a
    private ``/tmp`` (default: the working directory it is started in). ``readable``: paths
    it must be able to read (its command's own paths are added: ``sandbox_setup``). The sandbox:

    * its own network namespace, loopback only (nothing can leave; abstract Unix sockets are
      per network namespace, so the host's are out of reach), a ``resolv.conf`` naming
      127.0.0.1 (every name look-up fails at once), and the relay;
    * its own mount namespace, every mount read-only (``mount_setattr``, recursive), then
      fresh tmpfs over ``/tmp``, ``/var/tmp``, ``/dev/shm`` (everyone's, sticky) and ``/run``
      (no host Unix socket there is in reach), a fresh ``/proc``, and the ``writable`` folders
      mounted back writable;
    * its own PID, IPC and UTS namespaces: the setup process is the namespace's pid 1; when it
      ends, the kernel kills every process left in it (``setsid``, double forks and empty
      environments included), and nothing outside (the supervisor, the tool) is visible or
      can be signalled from inside;
    * as root: the program runs as ``AGENT_UID``/``AGENT_GID`` (no supplementary groups), with
      no capabilities (empty bounding, inheritable and ambient sets, ``no_new_privs``: no
      setuid program gives them back), so ``setns``, ``mount`` and ``unshare`` of the host's
      namespaces are refused, root-owned files are read as any other user reads them, and
      ``/proc/<pid>`` of pid 1 is not its to open. Each writable folder is mounted back
      idmapped (its owner on disk seen as ``AGENT_UID``): the program writes it, the files
      stay its owner's — the tool reads and removes them as before, nothing is chowned.
    * not root: the same in a user namespace of the caller's uid (mapped to itself), the
      program with no capabilities there either.

    Where none of this can be made (no user namespaces, a kernel before 5.12), ``available()``
    is False, the agent gets the environment alone (the recipes point every API at the
    endpoint) and ``note()`` says "not sandboxed".

    ``folders`` finds the folders of a test's scratch directory a command names: what its
    sandbox lets it write.

Abstractions
    This module is the caller's side: the command, whether a sandbox can be made here and
    what it covers in one line. The sandbox itself is made by
    ``simulations.live.process.sandbox_setup``, the file ``wrap``'s command runs (standard
    library only); whether one can be made is found by making one (``_probe``: ``true`` run in
    it, once per kind and process), so ``available`` and ``note`` never guess from the
    kernel's version.

    Not covered: a seccomp filter (the kernel's whole system-call surface is there, user
    namespaces of its own included: they give capabilities over nothing of the host's), CPU,
    memory and disk limits (no cgroup), what a readable file tells. Without root the program
    is the caller's own uid: its files elsewhere are read-only, not unreadable, and a Unix
    socket of that user's outside ``/tmp`` and ``/run`` stays in reach.

Source
    bubblewrap (``--unshare-all``, ``--ro-bind / /``, ``--tmpfs``, ``--die-with-parent``,
    ``--cap-drop ALL``, pid 1 that reaps), nsjail and firejail (a dedicated uid, no new
    privileges); Linux namespaces(7), pid_namespaces(7) (pid 1's end kills the namespace),
    user_namespaces(7), capabilities(7), mount_setattr(2) (``MOUNT_ATTR_IDMAP``),
    open_tree(2), move_mount(2), prctl(2); util-linux ``unshare --net --mount --pid --fork
    --kill-child --mount-proc`` and ``setpriv --reuid --regid --clear-groups --inh-caps=-all
    --bounding-set=-all --no-new-privs`` (the same calls, from here).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from simulations.live.process import sandbox_setup
from simulations.live.process.sandbox_setup import AGENT_UID

if TYPE_CHECKING:
    from collections.abc import Sequence

_SETUP = os.path.abspath(sandbox_setup.__file__)  # the file the sandbox's command runs


def _userns_default() -> bool:
    return os.geteuid() != 0


_probed: dict[bool, str] = {}  # userns → "" (a sandbox can be made) or why not, once each


def _probe(userns: bool) -> str:
    """Why a sandbox of this kind cannot be made here ("" where it starts and runs ``true``)."""
    if userns not in _probed:
        import subprocess

        try:
            done = subprocess.run(
                wrap(["true"], 0, "", writable=(), userns=userns),
                capture_output=True,
                timeout=20,
                check=False,
                cwd="/",
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            _probed[userns] = str(e)
        else:
            lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit {done.returncode}"
            _probed[userns] = "" if done.returncode == 0 else why.removeprefix("sandbox: ")
    return _probed[userns]


def available() -> bool:
    """A sandbox can be made here: as root, or in a user namespace of the caller's own."""
    return sys.platform == "linux" and not _probe(_userns_default())


def note() -> str:
    """How the agents of this run are contained, in one line: what the sandbox covers."""
    if sys.platform != "linux":
        why = "not Linux"
    elif not (why := _probe(_userns_default())):
        return _covers(_userns_default())
    return (
        f"not sandboxed ({why}): environment only — the agent could reach the network, "
        "the host's processes and every file its user may write"
    )


def _covers(userns: bool) -> str:
    who = (
        f"own user namespace (uid {os.getuid()} mapped to itself, no capabilities)"
        if userns
        else f"own user (uid {AGENT_UID}, no capabilities)"
    )
    return (
        "a network namespace per agent process (loopback only: nothing can leave), and its "
        f"{who}, mount (read-only but its home, cwd, store and a private /tmp; /tmp and /run "
        "fresh: no host Unix socket under them in reach, one elsewhere is where its mode lets "
        "the agent's uid connect) and PID namespaces (the kernel ends every process it leaves)"
    )


def wrap(
    argv: Sequence[str],
    port: int,
    socket_path: str,
    *,
    writable: Sequence[str] | None = None,
    readable: Sequence[str] = (),
    userns: bool | None = None,
) -> list[str]:
    """``argv`` run in the sandbox (see the module's text): ``writable`` the folders it may
    write (None: the directory it is started in), ``readable`` paths it must read,
    ``userns`` a user namespace even as root (None: only where not root)."""
    command = [sys.executable, "-I", "-S", _SETUP, str(port), socket_path]
    for path in ["."] if writable is None else writable:
        command += ["--rw", str(path)]
    for path in readable:
        command += ["--ro", str(path)]
    if userns if userns is not None else _userns_default():
        command.append("--userns")
    return [*command, "--", *argv]


def folders(argv: Sequence[str], under: str | None) -> list[str]:
    """The folders directly inside ``under`` that ``argv`` names anywhere in its words (a
    test's fresh ``{store}`` and ``{home}``, whole, after ``NAME=``, or inside a shell
    command): what its sandbox lets it write."""
    if not under:
        return []
    import re

    found: dict[str, None] = {}
    for root in dict.fromkeys((under.rstrip("/"), os.path.realpath(under))):
        pattern = re.compile(re.escape(root) + r"/([^/\s'\"`;:$|&<>(){}]+)")
        for word in argv:
            for name in pattern.findall(word):
                top = os.path.join(root, name)
                if os.path.isdir(top) and not os.path.islink(top):
                    found[os.path.realpath(top)] = None
    return list(found)
