"""The hub's runtime builder (grader/hub/runtime.py), in parts: the constraints for Debian's
Python, console scripts moved to another venv, the hard-linked tree leaving out what it must.
(The whole builder runs in tests/hub, which starts servers on what it built.)"""

from __future__ import annotations

import os

from grader.hub.runtime import _copy_script, _link_tree, constraints


def test_overrides_replace_the_lock_pins_of_the_same_package():
    lock = "# comment\nbeautifulsoup4==4.15.0\nsoupsieve==4.1.2\nSoupSieve_x==1\ntorch==2.13.0\n"
    pins = constraints(lock, "# why\nsoupsieve==2.10\n")
    assert pins.splitlines() == ["beautifulsoup4==4.15.0", "SoupSieve_x==1", "torch==2.13.0",
                                 "soupsieve==2.10"]


def test_a_console_script_points_at_the_new_venv(tmp_path):
    old, new = tmp_path / "old" / "bin", tmp_path / "new" / "bin"
    old.mkdir(parents=True)
    new.mkdir(parents=True)
    (old / "tool").write_text(f"#!{old}/python3\nimport sys\nfrom tool import main\nmain()\n")
    (old / "data.txt").write_text("#!/bin/sh\necho not a script of this venv\n")
    _copy_script(old / "tool", new / "tool", old, new)
    _copy_script(old / "data.txt", new / "data.txt", old, new)
    assert (new / "tool").read_text().splitlines()[0] == f"#!{new}/python3"
    assert (new / "tool").read_text().endswith("main()\n")
    assert os.access(new / "tool", os.X_OK)
    assert not (new / "data.txt").exists()


def test_the_linked_tree_shares_files_and_leaves_out_what_is_skipped(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "keep").mkdir(parents=True)
    (src / "course").mkdir()
    (src / "keep" / "a.py").write_text("a")
    (src / "course" / "secret.py").write_text("s")
    (src / "course_hook.pth").write_text("/repo")
    (dst / "keep").mkdir(parents=True)
    (dst / "keep" / "own.py").write_text("the new venv's own")
    _link_tree(src, dst, {"course", "course_hook.pth"})
    assert os.path.samefile(src / "keep" / "a.py", dst / "keep" / "a.py")
    assert not (dst / "course").exists() and not (dst / "course_hook.pth").exists()
    assert (dst / "keep" / "own.py").read_text() == "the new venv's own"
