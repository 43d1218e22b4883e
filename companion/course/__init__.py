"""The course's machinery: exercises and their checks, the grader, and the notebook helpers.

Notebooks use::

    from companion.course import check, setup, show_source, show_solution
    from companion.course import head_view  # chapter 9: attention weights to explore

Instructors grade a folder of notebooks with ``python -m companion.course.grading FOLDER``
(``make grade``). Nothing in the blocks, models or data imports this wing.
"""

from .head_view import head_view
from .notebook import check, setup, show_solution, show_source

__all__ = ["check", "setup", "show_source", "show_solution", "head_view"]
