"""The instructor's late penalty (grader/nbgrader/late.py): the rule, counted in started days, never
taking a score below 0; kept per assignment by `grader release --late-penalty`; applied by
nbgrader's own late step at autograde; shown in the feedback page and the class report;
subtracted in every export."""

import csv
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from grader.course import Course
from grader.lms import points
from grader.nbgrader.late import LatePolicy, load_policy, save_policy
from tests.support import cli
from tests.support.classes import (
    add_assignment,
    add_submission,
    new_gradebook,
    write_sample_class,
)

DAY = 86400
grader = partial(cli.grader, timeout=900)


# ----- the rule -------------------------------------------------------------------------------

TEN_A_DAY = LatePolicy.parse("10%/day,max=50%")


@pytest.mark.parametrize(("seconds", "points_taken"), [
    (0, 0.0),  # on time
    (-5, 0.0),  # early
    (1, 2.0),  # 1 s late: one started day
    (DAY, 2.0),  # exactly one day: still the first day
    (DAY + 1, 4.0),  # a day and a second: the second day has started
    (4.5 * DAY, 10.0),  # 5 started days: 50%
    (30 * DAY, 10.0),  # capped at 50%
])
def test_ten_percent_of_the_points_per_started_day_capped(seconds, points_taken):
    assert TEN_A_DAY.penalty(score=18, max_score=20, seconds_late=seconds) == points_taken


def test_the_penalty_never_takes_a_score_below_zero():
    assert TEN_A_DAY.penalty(score=3, max_score=20, seconds_late=3 * DAY) == 3  # 6 would be due
    assert TEN_A_DAY.penalty(score=0, max_score=20, seconds_late=3 * DAY) == 0
    zero = LatePolicy.parse("zero")
    assert zero.penalty(score=17.5, max_score=20, seconds_late=1) == 17.5
    assert zero.penalty(score=17.5, max_score=20, seconds_late=0) == 0


def test_hours_and_uncapped_rules():
    hourly = LatePolicy.parse("2%/hour")
    assert hourly.penalty(20, 20, 3600) == pytest.approx(0.4)
    assert hourly.penalty(20, 20, 3601) == pytest.approx(0.8)
    assert hourly.penalty(20, 20, 100 * 3600) == 20  # uncapped: up to the whole score
    assert LatePolicy.parse("10%/day").penalty(3, 3, 1) == 0.3  # no float noise (0.30000000004)


@pytest.mark.parametrize(("text", "stored", "words"), [
    ("10%/day,max=50%", "10%/day,max=50%",
     "10% of the points for each started day late, at most 50%"),
    (" 10 % / DAY , max = 50 % ", "10%/day,max=50%",
     "10% of the points for each started day late, at most 50%"),
    ("2.5%/hour", "2.5%/hour", "2.5% of the points for each started hour late"),
    ("zero", "zero", "a late submission scores 0"),
    ("none", "none", "no late penalty"),
])
def test_rules_are_read_and_written_back(text, stored, words):
    policy = LatePolicy.parse(text)
    assert str(policy) == stored and policy.describe() == words
    assert LatePolicy.parse(str(policy)) == policy


@pytest.mark.parametrize("text", ["10", "10%", "10%/week", "-5%/day", "0%/day", "150%/day",
                                  "10%/day,max=200%", "10%/day;max=50%", "=1+1", ""])
def test_a_rule_that_is_not_one_is_refused(text):
    with pytest.raises(ValueError, match="late penalty|percentage"):
        LatePolicy.parse(text)


def test_rules_are_kept_per_assignment_in_the_course(tmp_path):
    assert load_policy(tmp_path, "soft_select") is None
    save_policy(tmp_path, "soft_select", TEN_A_DAY)
    save_policy(tmp_path, "by_hand", LatePolicy.parse("zero"))
    assert load_policy(tmp_path, "soft_select") == TEN_A_DAY
    assert load_policy(tmp_path, "by_hand") == LatePolicy.parse("zero")
    save_policy(tmp_path, "by_hand", LatePolicy.parse("none"))
    assert load_policy(tmp_path, "by_hand") is None
    assert load_policy(tmp_path, "soft_select") == TEN_A_DAY, "the other one is left alone"
    (tmp_path / "late_penalties.json").write_text("{not json")
    with pytest.raises(ValueError, match="late_penalties.json cannot be read"):
        load_policy(tmp_path, "soft_select")


def test_a_bad_rule_on_the_command_line_stops_before_any_release(tmp_path):
    done = grader("release", "soft_select", "--late-penalty", "10%/week", "--course",
                  str(tmp_path / "c"), cwd=tmp_path)
    assert done.returncode == 2
    assert "argument --late-penalty: '10%/week' is not a late penalty: write one like" in \
        done.stderr
    assert not (tmp_path / "c").exists()


def test_nbgraders_late_step_takes_the_stored_rule(tmp_path):
    """The course's nbgrader configuration, nbgrader's AssignLatePenalties step and our plugin,
    on a gradebook built through nbgrader's API (no notebook executed): 10%/day of a 20-point
    notebook handed in 2 days and 1 second late is 6 points; 2 points scored lose only 2."""
    from nbformat.v4 import new_notebook
    from nbgrader.preprocessors import AssignLatePenalties

    from grader.nbgrader.config import nbgrader_config

    due = datetime(2026, 3, 1, 12, 0)
    with new_gradebook(tmp_path) as (course, gb):
        add_assignment(gb, "hw", [20], duedate=due)
        for student, score in (("alice", 18), ("bob", 2), ("carol", 18)):
            gb.add_student(student)
            late = timedelta(days=2, seconds=1) if student != "carol" else timedelta(0)
            add_submission(gb, "hw", student, [score], timestamp=due + late)

    def penalties() -> dict:
        step = AssignLatePenalties(config=nbgrader_config(course))
        for student in ("alice", "bob", "carol"):
            step.preprocess(new_notebook(), {"nbgrader": {
                "notebook": "hw", "assignment": "hw", "student": student,
                "db_url": course.db_url}})
        with course.gradebook() as gb:
            return {s: gb.find_submission("hw", s).late_submission_penalty
                    for s in ("alice", "bob", "carol")}

    assert penalties() == {"alice": 0, "bob": 0, "carol": 0}, "no rule: nbgrader's 'none'"
    save_policy(course.root, "hw", LatePolicy.parse("10%/day"))
    assert penalties() == {"alice": 6, "bob": 2, "carol": 0}
    save_policy(course.root, "hw", LatePolicy.parse("zero"))
    assert penalties() == {"alice": 18, "bob": 2, "carol": 0}


# ----- through the commands -------------------------------------------------------------------

@pytest.mark.slow
def test_a_late_class_loses_the_points_the_rule_says(tmp_path):
    course = tmp_path / "course"
    due = datetime.now(UTC) - timedelta(hours=36)  # handed in now: 2 started days late
    done = grader("release", "soft_select", "--course", str(course), "--due",
                  due.strftime("%Y-%m-%d %H:%M:%S"), "--late-penalty", "10%/day,max=50%",
                  cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("soft_select: late penalty 10%/day,max=50%: 10% of the points for each started day "
            "late, at most 50%, applied by every autograde of soft_select") in done.stdout

    write_sample_class(tmp_path / "subs", course, "alice", "bob")  # alice perfect, bob blank
    done = grader("autograde", "soft_select", "--course", str(course), "--submissions",
                  str(tmp_path / "subs"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("  late penalty: 10% of the points for each started day late, at most 50%"
            in done.stdout)

    with Course.at(course).gradebook() as gb:
        subs = {s: gb.find_submission("soft_select", s) for s in ("alice", "bob")}
        raw = {s: sub.score for s, sub in subs.items()}
        taken = {s: sub.late_submission_penalty for s, sub in subs.items()}
        max_score = subs["alice"].max_score
        assert 36 * 3600 <= subs["alice"].total_seconds_late < 37 * 3600
    assert raw["alice"] == 15 and raw["bob"] == 0
    assert taken["alice"] == pytest.approx(0.2 * max_score) and 0 < taken["alice"] < 15
    assert taken["bob"] == 0, "a score of 0 stays 0: nothing below it"

    done = grader("export", "--course", str(course), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with open(course / "exports" / "grades.csv", newline="") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert float(rows["alice"]["late_submission_penalty"]) == pytest.approx(taken["alice"])
    assert float(rows["alice"]["score"]) == pytest.approx(15 - taken["alice"])
    assert float(rows["bob"]["score"]) == 0.0
    done = grader("export", "--format", "canvas", "--course", str(course), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with open(course / "exports" / "grades-canvas.csv", newline="") as f:
        canvas = {r["SIS Login ID"]: r for r in csv.DictReader(f)}
    assert canvas["alice"]["soft_select"] == points(15 - taken["alice"])

    done = grader("feedback", "soft_select", "--course", str(course), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (course / "feedback" / "alice" / "soft_select" / "soft_select.html").read_text()
    assert (f"Late submission penalty (Score: -{round(taken['alice'], 2)}): handed in 36.0 "
            "hours (2 started days) late; the rule: 10% of the points for each started day "
            "late, at most 50%") in page

    done = grader("report", "soft_select", "--course", str(course), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = (course / "reports" / "soft_select.html").read_text()
    assert "<h2>Late submissions</h2>" in report
    assert "the rule: 10% of the points for each started day late, at most 50%" in report
    assert (f"<tr><td>alice</td><td>36.0 hours (2 started days)</td>"
            f"<td>{taken['alice']:g}</td></tr>") in report
