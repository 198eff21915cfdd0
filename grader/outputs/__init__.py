"""What the grader hands out after grading: students' feedback pages (feedback.py), the
instructor's class report (report.py), grade exports for nbgrader's CSV or an LMS (export.py);
the HTML is built from templates/."""
