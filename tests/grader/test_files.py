"""grader/files.py: the one walker (links neither followed nor listed), the one folder hash
and the one atomic write, on the trees a student can make."""

import os
from pathlib import Path

import pytest

from grader.files import folder_hash, regular_files, tree, write_atomic


@pytest.fixture
def submission(tmp_path):
    """A submission folder with a nested file, a link to a secret file, a link to a folder
    outside it, and a FIFO."""
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "secret.txt").write_text("the instructor's")
    (outside / "deep" / "key.txt").write_text("another")
    sub = tmp_path / "alice" / "soft_select"
    (sub / "data").mkdir(parents=True)
    (sub / "soft_select.ipynb").write_text("{}")
    (sub / "data" / "b.txt").write_text("b")
    (sub / "a.txt").write_text("a")
    (sub / "secret.txt").symlink_to(outside / "secret.txt")
    (sub / "elsewhere").symlink_to(outside, target_is_directory=True)
    os.mkfifo(sub / "pipe")
    return sub


def test_the_walker_lists_regular_files_and_folders_only_and_follows_no_link(submission):
    walked = list(tree(submission))
    folders = [here.relative_to(submission).as_posix() for here, _, _ in walked]
    assert folders == [".", "data"]  # the linked folder is never entered
    assert [p.relative_to(submission).as_posix() for p in regular_files(submission)] == \
        ["a.txt", "soft_select.ipynb", "data/b.txt"]


def test_the_folder_hash_reads_names_and_bytes_and_nothing_through_links(submission, tmp_path):
    before = folder_hash(submission)
    (tmp_path / "outside" / "secret.txt").write_text("changed")  # behind a link: no change
    (tmp_path / "outside" / "deep" / "key.txt").write_text("changed")
    assert folder_hash(submission) == before
    (submission / "data" / "b.txt").write_text("B")  # a file's bytes
    assert folder_hash(submission) != before
    (submission / "data" / "b.txt").write_text("b")
    assert folder_hash(submission) == before
    (submission / "a.txt").rename(submission / "c.txt")  # a file's name
    assert folder_hash(submission) != before


def test_the_folder_hash_leaves_out_only_what_it_is_told(submission):
    with_stamp = folder_hash(submission)
    (submission / "timestamp.txt").write_text("2026-01-01 10:00:00")
    assert folder_hash(submission) != with_stamp
    assert folder_hash(submission, {"timestamp.txt"}) == with_stamp
    (submission / "timestamp.txt").write_text("2026-01-02 10:00:00")
    assert folder_hash(submission, {"timestamp.txt"}) == with_stamp


def test_an_atomic_write_replaces_a_link_and_leaves_no_partial_file(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("keep me")
    target = tmp_path / "pages" / "alice.html"
    target.parent.mkdir()
    target.symlink_to(secret)
    write_atomic(target, "<p>page</p>")
    assert secret.read_text() == "keep me" and not target.is_symlink()
    assert target.read_text() == "<p>page</p>" and (target.stat().st_mode & 0o777) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["alice.html"]


def test_a_failed_atomic_write_keeps_the_old_file_and_removes_its_partial_one(tmp_path):
    target = tmp_path / "status.json"
    target.write_text('{"old": 1}')

    class Unwritable:  # data that fails midway (a full disk, an interrupt)
        pass

    with pytest.raises(TypeError):
        write_atomic(target, Unwritable())
    assert target.read_text() == '{"old": 1}'
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]


def test_an_atomic_write_names_its_partial_file_itself(tmp_path, monkeypatch):
    # The target's name may be a student id at the file-name limit: the partial file's name
    # must not be made from it.
    seen = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (seen.append(Path(a).name), real(a, b)))
    write_atomic(tmp_path / ("x" * 255), b"data")
    assert len(seen) == 1 and "x" * 20 not in seen[0] and seen[0].startswith(".grader-")
