"""Huge pages for the sandbox server's heap, so that forking a student's process copies fewer
page-table entries.

The server's environment adds TUNING to its students' (grader.sandbox.launcher.launch), and the
server takes it out again as it starts (grader.sandbox.zygote.main): glibc's malloc asks the
kernel for huge pages (2 MiB) for its heap, where the kernel's transparent huge pages are
"madvise" or "always" (with "never", nothing changes). A fork copies one page-table entry, and
an exit drops one, for each page of the server's memory: half of it is malloc's, and in huge
pages that is 512 times fewer entries. A student's first write to a shared page copies 4 KiB as
before (the kernel splits the huge page's entry for that process). grader.sandbox.namespaces
binds the folder of /sys where glibc reads the kernel's setting (HUGE_PAGES). The gain is in
docs/performance.md's table.
"""

TUNING = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
