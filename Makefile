# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Both create .venv from requirements/lock.txt when it is missing or out of date, after the Debian
# packages they need (docs/install.md says which, for each target).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check -c requirements/lock.txt

.PHONY: demo test test-fast test-setup lint lab lectures bench student-wheel student-env lock clean mutants
.PHONY: lecture-data cuda-check cli-reference site site-without-solutions browser-test screenshots sandbox-tools bench-curve hub hub-remove hub-tools lectures-other-cpus bytecode
.PHONY: debian-packages browser-tools test-services fresh-check figures-other-cpus

## Debian packages. Each NEED_* is a shell test that adds the package(s) it stands for to $m when
## they are missing; `$(call apt-need,WHO,NEED_...)` runs the tests, then requirements/apt-need
## installs what they found (root, or sudo), or stops with one line naming the packages and the
## command that installs them.
PY_VERSION = $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
# venv's ensurepip: Debian ships it apart from Python, in python3.X-venv.
NEED_VENV = { $(PYTHON) -m venv --help >/dev/null 2>&1 && $(PYTHON) -c 'import ensurepip' 2>/dev/null; } \
	|| m="$$m python$(PY_VERSION)-venv";
NEED_SANDBOX = command -v bwrap >/dev/null || m="$$m bubblewrap";
# The lectures' real data (nothing downloads while a lecture runs): python3.11-doc (the Python
# documentation's prose, for the language models; PSF License), unless $PYTHON_DOCS_SOURCES points
# the lectures at another copy (lectures/toolkit/python_docs.py), and trans-de-en (the Ding
# dictionary's German-English sentences, for translation; GPL-2+).
NEED_DATA = if [ -n "$${PYTHON_DOCS_SOURCES:-}" ]; then test -d "$$PYTHON_DOCS_SOURCES/tutorial" || { \
	  echo "PYTHON_DOCS_SOURCES=$$PYTHON_DOCS_SOURCES has no tutorial/ folder: point it at the _sources" \
	    "folder of the Python 3.11 documentation, or unset it to use Debian's python3.11-doc" >&2; \
	  exit 1; }; \
	else test -d /usr/share/doc/python3.11/html/_sources/tutorial || m="$$m python3.11-doc"; fi; \
	test -f /usr/share/trans/de-en || m="$$m trans-de-en";
# make hub: acl (setfacl), npm (the proxy), tini (reaps each server's orphans), Debian's own
# Python 3.11 with venv (the servers' Python).
NEED_HUB = command -v setfacl >/dev/null || m="$$m acl"; command -v npm >/dev/null || m="$$m npm"; \
	command -v tini >/dev/null || m="$$m tini"; \
	{ /usr/bin/python3.11 -m venv --help >/dev/null 2>&1 && /usr/bin/python3.11 -c 'import ensurepip' \
	  2>/dev/null; } || m="$$m python3.11-venv";
# The browser tests drive Debian's chromium (Playwright never downloads a browser of its own).
NEED_BROWSER = test -x /usr/bin/chromium || m="$$m chromium fonts-dejavu-core fonts-liberation";
# The gradebook tests grade into a real PostgreSQL server (requirements/postgres-up starts it).
NEED_POSTGRES = command -v pg_ctlcluster >/dev/null || m="$$m postgresql";
apt-need = m=""; $(2) sh requirements/apt-need "$(1)" $$m

# What each goal needs, all installed at once before .venv is touched (debian-packages).
NEEDS_demo                  = $(NEED_SANDBOX) $(NEED_DATA)
NEEDS_test                  = $(NEED_SANDBOX) $(NEED_HUB) $(NEED_DATA) $(NEED_BROWSER) $(NEED_POSTGRES)
NEEDS_test-setup            = $(NEEDS_test)
NEEDS_test-fast             = $(NEED_SANDBOX) $(NEED_DATA)
NEEDS_hub                   = $(NEED_SANDBOX) $(NEED_HUB)
NEEDS_mutants               = $(NEED_SANDBOX) $(NEED_DATA)
NEEDS_bench                 = $(NEED_SANDBOX) $(NEED_DATA)
NEEDS_bench-curve           = $(NEED_SANDBOX)
NEEDS_lab                   = $(NEED_DATA)
NEEDS_lectures              = $(NEED_DATA)
NEEDS_lectures-other-cpus   = $(NEED_DATA)
NEEDS_site                  = $(NEED_DATA)
NEEDS_site-without-solutions = $(NEED_DATA)
NEEDS_browser-test          = $(NEED_DATA) $(NEED_BROWSER)
NEEDS_screenshots           = $(NEED_DATA) $(NEED_BROWSER) $(NEED_HUB)
GOALS = $(or $(MAKECMDGOALS),demo)

## Every Debian package this run's goals need (python3.X-venv for .venv, and NEEDS_<goal>),
## installed in one go before anything else is touched; when they cannot be, one line names them.
debian-packages:
	@$(call apt-need,make $(GOALS),$(NEED_VENV) $(foreach g,$(GOALS),$(NEEDS_$(g))))

## .venv from the lock. A venv that lacks pip (what `python3 -m venv` leaves where ensurepip is
## missing) is made again; one this run created is removed again when its creation or the install
## fails or is interrupted, so that no later make trips over a half-made .venv. The stamp is
## touched only when everything installed.
$(STAMP): pyproject.toml setup.py requirements/lock.txt | debian-packages
	@made=""; if ! { test -x $(BIN)/python && test -x $(BIN)/pip; }; then \
	  made=1; trap 'rm -rf $(VENV); exit 1' INT TERM HUP; rm -rf $(VENV); \
	  $(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	    echo "$(PYTHON) -m venv $(VENV) failed (its message above); removed the half-made $(VENV)" >&2; \
	    exit 1; }; fi; \
	echo "Installing the pinned environment into $(VENV) (first time: about two minutes)..."; \
	if ! { $(PIP) setuptools wheel && $(PIP) --no-build-isolation -e '.[dev]'; }; then \
	  if [ -n "$$made" ]; then rm -rf $(VENV); \
	    echo "pip could not install the pinned environment (its message above); removed the" \
	      "half-made $(VENV): once that is fixed, run the same command again" >&2; \
	  else echo "pip could not update $(VENV) to requirements/lock.txt (its message above)" >&2; fi; \
	  exit 1; fi; \
	touch $@

## Python's bytecode for the repository's own packages, as pip writes it for the packages it
## installs (an editable install does not, and with PYTHONDONTWRITEBYTECODE set Python never
## would): otherwise every grading process (the command, the judges' fork server, each sandbox)
## compiles the grader from source when it starts (docs/performance.md). Stale files are
## recompiled here; Python checks each against its source anyway.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q grader solutions

## The lectures' real data (NEED_DATA above): installed when missing and we may (root, or sudo),
## otherwise a clear message. With $PYTHON_DOCS_SOURCES set, that folder is checked instead and
## python3.11-doc is not installed.
lecture-data:
	@$(call apt-need,make lecture-data (the lectures' data),$(NEED_DATA))

## The grader runs students' code in Debian's bubblewrap sandbox (`bwrap`): installed here when
## missing and we may (root, or sudo), otherwise a clear message.
sandbox-tools:
	@$(call apt-need,make $(GOALS) (the grader's sandbox),$(NEED_SANDBOX))

## The main job: release every assignment, grade a sample class on each, export grades. The
## capstone (tiny_gpt) trains on the Python tutorial: the lectures' data.
demo: $(STAMP) sandbox-tools lecture-data bytecode
	$(BIN)/python -m grader demo

## The course on JupyterHub on this machine (root): an instructor and demo students as Unix
## users (printed with their passwords), nbgrader's exchange between them; http://127.0.0.1:8000.
## See README, "Running a course". Debian packages it needs: acl (setfacl), npm (the proxy),
## python3.11-venv (the servers' Python), tini (reaps each server's orphans).
hub-tools:
	@$(call apt-need,make $(GOALS) (the hub),$(NEED_HUB))

hub: $(STAMP) sandbox-tools hub-tools
	$(BIN)/python -m grader hub

## Undo `make hub` (root): stop it, remove its users, groups, the ACL on the checkout, the
## exchange's file system and /srv/attention-course. Safe to run again.
hub-remove: $(STAMP)
	$(BIN)/python -m grader hub --remove

## Lint, then every test (CI runs this through .ci/run). Each lecture executes once a run, and the
## demo's sample classes are graded once; the summary at the end counts both. TEST_WORKERS=N runs
## the suite on N pytest-xdist workers (tests/support/schedule.py: what shares a server or a build
## runs whole on one, the longest first): about 18 min instead of 26 on 2 cores, but the lectures,
## executed beside another worker, then come near or over their 300-s budget
## (docs/performance.md), so CI runs one process (0: no workers).
TEST_WORKERS ?= 0
test: test-setup
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

## What `make test` installs and starts before it runs anything: .venv, the Debian packages (the
## sandbox, the hub's, the lectures' data, chromium and fonts, PostgreSQL), a running PostgreSQL
## with the tests' role (requirements/postgres-up), the bytecode.
test-setup: $(STAMP) sandbox-tools hub-tools lecture-data test-services bytecode

## The browser tests (tests/browser) drive Debian's chromium through Playwright.
browser-tools:
	@$(call apt-need,make $(GOALS) (the browser tests),$(NEED_BROWSER))

## The services the full suite uses: chromium, and PostgreSQL started with the role the gradebook
## tests log in as. `make test` passes them its URL (unless GRADER_POSTGRES_URL is set already).
test-services: browser-tools
	@$(call apt-need,make $(GOALS) (the gradebook tests),$(NEED_POSTGRES))
	@sh requirements/postgres-up
test: export GRADER_POSTGRES_URL ?= postgresql://grader:grader@127.0.0.1:5432/postgres

## The inner loop (under 2 minutes): lint, then the tests that start no kernel, notebook server
## or browser (`slow` and `browser` are left out). `make test` stays the full suite.
test-fast: $(STAMP) sandbox-tools lecture-data bytecode
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/python -m pytest -m "not slow and not browser"

## Lint, and the grader's import contracts (its layers, no cycles: pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo --no-cache

## Mutants of every function students write, made by machine from the source solutions
## (tests/mutants/): each judged equivalent or not by a differential harness, all graded through
## autograde; per assignment: generated, equivalent, killed, survived, and the causes the killed
## ones' messages name (right / none / wrong). Details in build/mutants/. Minutes per assignment;
## ARGS narrows it, e.g. make mutants ARGS="--assignment soft_select --sample 20".
mutants: $(STAMP) sandbox-tools lecture-data bytecode
	$(BIN)/python -m tests.mutants $(ARGS)

## JupyterLab on the course, with nbgrader's extension and a course directory under build/.
lab: $(STAMP) lecture-data
	$(BIN)/python -m grader lab

## Executed copies of the lectures, and HTML, under build/lectures/ (for self-learners).
lectures: $(STAMP) lecture-data
	cd lectures && ../$(BIN)/python -m toolkit.execute

## Everything that needs a CUDA device: `pytest -m cuda` and the lectures' GPU cells (lecture 08
## executed whole), executed copies and a JUnit report in build/cuda/. Fails without a device.
cuda-check: $(STAMP)
	$(BIN)/python tests/cuda_checks.py build/cuda

## The lectures on the kernels of older CPUs: PyTorch, oneDNN and MKL held to AVX2, then to SSE4
## (a model trained here computes slightly different numbers on another CPU; every claim must hold).
lectures-other-cpus: $(STAMP) lecture-data
	cd lectures && ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
		../$(BIN)/python -m toolkit.execute ../build/lectures-avx2
	cd lectures && ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 \
		MKL_ENABLE_INSTRUCTIONS=SSE4_2 ../$(BIN)/python -m toolkit.execute ../build/lectures-sse4

## The figures the tests hold to a text or a threshold (the model answers' tables, trained
## losses), computed on four settings of kernels and threads, with each figure's spread; then the
## tests that check them, on each setting (tests/figures_across_cpus.py; minutes, not in CI).
figures-other-cpus: $(STAMP)
	$(BIN)/python tests/figures_across_cpus.py

## The self-study site (Jupyter Book): executed lectures and worked solutions, in build/site/.
## Reuses the executed lectures in build/lectures/ (`make lectures`) while they are up to date.
site: $(STAMP) lecture-data
	$(BIN)/python book/build.py
	@echo "Open build/site/index.html"

## docs/cli.md, the reference of `python -m grader`, from the CLI's own parser.
cli-reference: $(STAMP)
	$(BIN)/python docs/cli_reference.py

## The same site without the assignments' worked solutions, to publish during a term.
site-without-solutions: $(STAMP) lecture-data
	$(BIN)/python book/build.py --without-solutions
	@echo "Open build/site/index.html (no worked solutions in it)"

## The browser tests alone: Playwright drives Debian's chromium (/usr/bin/chromium) on `make lab`;
## a screenshot of every step lands in build/screenshots/. (`make test` runs them too.)
browser-test: $(STAMP) lecture-data browser-tools
	$(BIN)/python -m pytest tests/browser

## Refresh the README's screenshots in docs/img/ from a browser-test run and the hub's
## walkthrough (tests/hub/test_walkthrough.py: needs root, like `make hub`).
screenshots: browser-test hub-tools
	$(BIN)/python -m pytest tests/hub/test_walkthrough.py
	mkdir -p docs/img
	cp build/screenshots/hub_09_formgrader_due_date.png docs/img/hub-formgrader-release.png
	cp build/screenshots/hub_14_student_a_feedback_fetched.png docs/img/hub-assignment-list.png
	cp build/screenshots/hub_05_student_a_validate_fails.png docs/img/hub-validate.png
	cp build/screenshots/hub_13_formgrader_written_answer_graded.png \
		docs/img/hub-formgrader-manual.png
	cp build/screenshots/hub_15_student_a_feedback_page.png docs/img/hub-feedback.png
	cp build/screenshots/lecture_3_slider_moved.png docs/img/lecture-slider.png
	cp build/screenshots/student_1_check_fails.png docs/img/student-check-fails.png
	cp build/screenshots/student_2_check_passes.png docs/img/student-check-passes.png
	cp build/screenshots/formgrader_3_submissions.png docs/img/formgrader.png
	cp build/screenshots/report_1_top.png docs/img/class-report.png

## What a student waits for (Run All, `grader check`: 20 s each) and one autograded submission
## (60 s), per assignment; then a class of 30 against plain nbgrader (targets: 20x faster, start-up
## at most 5 s of CPU, CPU per notebook at most 1.5x the test work). On a quiet 2-core machine.
bench: $(STAMP) sandbox-tools lecture-data bytecode
	$(BIN)/python bench/autograde_one.py
	$(BIN)/python bench/autograde_class.py
	$(BIN)/python bench/autograde_class.py --split
	$(BIN)/python bench/handover.py
	$(BIN)/python bench/codec.py
	$(BIN)/python bench/crossing.py --spread
	$(BIN)/python bench/device_probe.py

## Seconds per notebook for classes of 10, 30, 100 and 300 (the README's plot): each size graded
## three times, in turns; the median and the spread.
bench-curve: $(STAMP) sandbox-tools bytecode
	$(BIN)/python bench/autograde_class.py --curve --repeats 3 --plot docs/img/scale-curve.png

## The student edition: the grader (for `python -m grader check`) without the reference solutions
## and without grader/demo (the sample class is built from the answer key). setup.py leaves both
## out; they are not even copied into the build folder.
student-wheel: $(STAMP)
	rm -rf build/student-src && mkdir -p build/student-src build/dist
	cp -r pyproject.toml setup.py README.md grader build/student-src/
	rm -rf build/student-src/grader/demo
	find build/student-src -name __pycache__ -prune -exec rm -rf {} +
	rm -f build/dist/attention_course-*.whl
	COURSE_EDITION=student $(BIN)/pip wheel --quiet --no-deps --no-build-isolation \
		-w build/dist build/student-src

student-env: student-wheel
	@test -x .venv-student/bin/pip || { rm -rf .venv-student; $(PYTHON) -m venv .venv-student || \
	  { rm -rf .venv-student; exit 1; }; }
	.venv-student/bin/pip install --quiet -c requirements/lock.txt build/dist/attention_course-*.whl

## Re-resolve the pins after changing the ranges in pyproject.toml. The oldest Python each
## supported platform ships (Debian 12: 3.11.2) must be able to install them: pip resolves here,
## on whatever 3.11 this machine has, so requirements/python-floor.txt holds back the packages
## whose newer releases need a later 3.11; tests/test_lock.py checks every pin.
lock: debian-packages
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/pip install --quiet setuptools wheel
	build/lock-venv/bin/pip install --quiet --no-build-isolation -c requirements/python-floor.txt '.[dev]'
	build/lock-venv/bin/pip freeze --all | grep -v -e '^attention-course' -e '^pip==' \
		| sed 's/+cpu$$//' | sort -f > build/lock.body
	{ sed -n '1,2p' requirements/lock.txt; cat build/lock.body; } > build/lock.txt
	mv build/lock.txt requirements/lock.txt

## README's set-up typed on a fresh Debian 12 root (mmdebstrap minbase with only what README asks
## for), as a user with sudo: passes only when `make demo` grades every sample student as
## predicted (tests/fresh_machine/run.sh; root; about 5 minutes, not part of CI).
## ARGS: --as root|both, --test-setup, --head, --keep, a checkout's path.
fresh-check:
	bash tests/fresh_machine/run.sh $(ARGS)

## Everything under build/, except the folders that hold a course (a gradebook.db, submitted/ or
## autograded/: grader/course.py), which may hold a real class's grades and submissions (the
## default course, build/course, is where `python -m grader` grades): they are kept, and named.
clean:
	@test -d build || exit 0; \
	courses=$$(find build -mindepth 1 -type d \( -exec test -e '{}/gradebook.db' \; \
	  -o -exec test -d '{}/submitted' \; -o -exec test -d '{}/autograded' \; \) -print -prune); \
	sweep() { for p in "$$1"/* "$$1"/.[!.]* "$$1"/..?*; do \
	    { test -e "$$p" || test -L "$$p"; } || continue; \
	    if printf '%s\n' "$$courses" | grep -qxF -- "$$p"; then \
	      echo "kept $$p, a course:$$(for f in gradebook.db submitted autograded; do \
	        test -e "$$p/$$f" && printf ' %s' "$$f"; done)"; \
	    elif test -d "$$p" && ! test -L "$$p" && printf '%s\n' "$$courses" | \
	      { while IFS= read -r c; do case "$$c" in "$$p"/*) exit 0;; esac; done; exit 1; }; \
	    then sweep "$$p"; \
	    else rm -rf -- "$$p"; fi; done; }; \
	if [ -z "$$courses" ]; then rm -rf build; echo "removed build/"; else sweep build; \
	  echo "removed build/ except the course folder(s) above (their gradebooks and submissions);" \
	    "delete one yourself, if you mean to, with rm -rf FOLDER"; fi
