# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Both create .venv from requirements/lock.txt when it is missing or out of date.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check -c requirements/lock.txt

.PHONY: demo test test-fast lint lab lectures bench student-wheel student-env lock clean mutants
.PHONY: lecture-data cuda-check cli-reference site site-without-solutions browser-test screenshots sandbox-tools bench-curve hub hub-remove hub-tools lectures-other-cpus bytecode

$(STAMP): pyproject.toml setup.py requirements/lock.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing the pinned environment into $(VENV) (first time: about two minutes)..."
	$(PIP) setuptools wheel
	$(PIP) --no-build-isolation -e '.[dev]'
	@touch $@

## Python's bytecode for the repository's own packages, as pip writes it for the packages it
## installs (an editable install does not, and with PYTHONDONTWRITEBYTECODE set Python never
## would): otherwise every grading process (the command, the judges' fork server, each sandbox)
## compiles the grader from source when it starts (docs/performance.md). Stale files are
## recompiled here; Python checks each against its source anyway.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q grader solutions

## The lectures' real data, from Debian's packages (nothing downloads while a lecture runs):
## python3.11-doc (the Python documentation's prose, for the language models; PSF License) and
## trans-de-en (the Ding dictionary's German-English sentences, for translation; GPL-2+).
## Installed when missing and we may (root with apt), otherwise a clear message.
lecture-data:
	@missing=""; test -d /usr/share/doc/python3.11/html/_sources/tutorial || \
	  missing="$$missing python3.11-doc"; test -f /usr/share/trans/de-en || missing="$$missing trans-de-en"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing$$missing (the lectures' data)..."; export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq $$missing >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; }; \
	  else echo "The lectures need:$$missing (sudo apt-get install$$missing)"; exit 1; fi; fi

## The main job: release the self-attention assignment, grade a sample class, export grades.
## The grader runs students' code in Debian's bubblewrap sandbox (`bwrap`): installed here when
## missing and we may (root with apt), otherwise a clear message.
sandbox-tools:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing bubblewrap (the grader's sandbox)..."; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq bubblewrap >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null; }; \
	  else echo "The grader needs bubblewrap: sudo apt-get install bubblewrap"; exit 1; fi; }

demo: $(STAMP) sandbox-tools bytecode
	$(BIN)/python -m grader demo

## The course on JupyterHub on this machine (root): an instructor and demo students as Unix
## users (printed with their passwords), nbgrader's exchange between them; http://127.0.0.1:8000.
## See README, "Running a course". Debian packages it needs: acl (setfacl), npm (the proxy),
## python3.11-venv (the servers' Python), tini (reaps each server's orphans).
hub-tools:
	@missing=""; command -v setfacl >/dev/null || missing="$$missing acl"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	command -v tini >/dev/null || missing="$$missing tini"; \
	/usr/bin/python3.11 -m venv --help >/dev/null 2>&1 && /usr/bin/python3.11 -c 'import ensurepip' \
	  2>/dev/null || missing="$$missing python3.11-venv"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing$$missing for the hub..."; export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -qq $$missing >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; }; \
	  else echo "The hub needs:$$missing (sudo apt-get install$$missing)"; exit 1; fi; fi

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
test: $(STAMP) sandbox-tools hub-tools lecture-data bytecode
	$(BIN)/ruff check .
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

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
mutants: $(STAMP) sandbox-tools bytecode
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
browser-test: $(STAMP) lecture-data
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
bench: $(STAMP) sandbox-tools bytecode
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
	@test -x .venv-student/bin/python || $(PYTHON) -m venv .venv-student
	.venv-student/bin/pip install --quiet -c requirements/lock.txt build/dist/attention_course-*.whl

## Re-resolve the pins after changing the ranges in pyproject.toml.
lock:
	rm -rf build/lock-venv && $(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/pip install --quiet setuptools wheel
	build/lock-venv/bin/pip install --quiet --no-build-isolation '.[dev]'
	build/lock-venv/bin/pip freeze --all | grep -v -e '^attention-course' -e '^pip==' \
		| sed 's/+cpu$$//' | sort -f > build/lock.body
	{ sed -n '1,2p' requirements/lock.txt; cat build/lock.body; } > build/lock.txt
	mv build/lock.txt requirements/lock.txt

clean:
	rm -rf build
