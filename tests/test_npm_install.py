"""``tools/npm_install.sh`` (the make targets' npm installs): the install runs with a scratch HOME
and TMPDIR of its own, so an install script that writes into the home or the temporary folder it
finds (opencode-ai's postinstall did both: `~/.config/opencode`, `/tmp/opencode`) leaves the real
ones alone; npm's cache stays where npm keeps it; the scratch folder goes."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_an_install_script_writes_in_a_scratch_home_that_is_removed(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    seen = tmp_path / "seen"
    # a stand-in npm: `config get cache` answers a folder; `install` writes where HOME and
    # XDG_CONFIG_HOME point, as a postinstall would, and says what it was given
    (fake / "npm").write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            if [ "$1" = config ]; then echo {tmp_path}/npm-cache; exit 0; fi
            mkdir -p "$HOME/.config/opencode" && echo x > "$HOME/.config/opencode/written"
            mkdir -p "${{TMPDIR:-/tmp}}/opencode"
            printf '%s\\n' "$HOME" "$npm_config_cache" "$PWD" "$*" "$TMPDIR" > {seen}
            """
        )
    )
    (fake / "npm").chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "agents"
    project.mkdir()
    shared_tmp = tmp_path / "tmp"  # the temporary folder everyone shares
    shared_tmp.mkdir()
    env = {
        **os.environ,
        "PATH": f"{fake}:{os.environ['PATH']}",
        "HOME": str(home),
        "TMPDIR": str(shared_tmp),
    }
    done = subprocess.run(
        ["sh", str(ROOT / "tools" / "npm_install.sh"), str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    scratch, cache, cwd, args, tmpdir = seen.read_text().splitlines()
    assert scratch != str(home) and scratch.startswith(str(shared_tmp))
    assert tmpdir.startswith(scratch + "/")  # the install's temporary folder: in the scratch
    assert cache == f"{tmp_path}/npm-cache" and cwd == str(project)
    assert args == "install --no-save --silent --no-audit --no-fund"
    assert list(home.iterdir()) == []  # the real home: nothing written
    assert not Path(scratch).exists()  # the scratch home: removed
    assert list(shared_tmp.iterdir()) == []  # the shared temporary folder: nothing left
