"""Submitting to nbgrader's exchange so that only the instructor can read the submission.

nbgrader's submit leaves a submission readable by everyone (files 0444) and its folder open to
everyone (0777), relying on the folder's random name, in an inbound folder no student can list,
to hide it. `PrivateSubmit` (the students' `ExchangeFactory.submit` on the hub) closes it: no
permission for "other" anywhere in it. The instructor reads it through the ACL entry that
inbound's default ACL gives everything created in it (grader.hub.folders.exchange); the group
bits below are that entry's mask, so they must keep read (and list, for folders).
"""

from __future__ import annotations

import os
from pathlib import Path

from nbgrader.exchange.default.submit import ExchangeSubmit

from grader.files import tree


class PrivateSubmit(ExchangeSubmit):
    def copy_files(self):
        super().copy_files()
        dest = os.path.join(self.inbound_path, self.assignment_filename)
        for folder, _, files in tree(Path(dest)):  # links neither followed nor changed
            os.chmod(folder, 0o750)
            for path in files:
                os.chmod(path, 0o640)
        os.chmod(dest, 0o770)  # the instructor may also remove it (what nbgrader's 0777 was for)
