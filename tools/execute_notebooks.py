"""Re-run chapter notebooks in place so their stored outputs (what the website shows) are fresh.

    python tools/execute_notebooks.py chapters/*.ipynb      (what `make execute` runs)

Runs the full version (COURSE_QUICK is cleared) and stores no per-cell timestamps, so a
re-run changes a notebook only where its outputs change; it prints the whole run's time and
the slowest cells (the standard's budget: 10 minutes a chapter). Cells tagged ``data-output`` show
text from a data set (IMDB reviews): their outputs are dropped before saving, because the
course does not republish the data; a reader sees them when running the notebook.
"""

import os
import sys
import time
from datetime import datetime
from pathlib import Path

import nbclient
import nbformat


def execute(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    # coalesce_streams: one output per stream, progress bars' carriage returns applied (the page
    # shows each bar's final state, as Jupyter does, not every update)
    client = nbclient.NotebookClient(notebook, timeout=3600, record_timing=True, coalesce_streams=True,
                                     resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    total = time.perf_counter() - start
    seconds = []
    for i, cell in enumerate(notebook.cells):
        timing = cell.metadata.pop("execution", None)  # timestamps: printed, not stored
        if timing and "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            began, ended = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                            for k in ("iopub.execute_input", "shell.execute_reply"))
            seconds.append(((ended - began).total_seconds(), i))
        if "data-output" in cell.metadata.get("tags", []):
            cell.outputs = []
        if cell.cell_type == "code":  # a finished progress bar (leave=False) leaves only blanks behind
            cell.outputs = [out for out in cell.outputs
                            if not (out.get("output_type") == "stream" and not out.get("text", "").strip())]
    nbformat.write(notebook, path)
    slowest = ", ".join(f"cell {i} {s:.0f} s" for s, i in sorted(seconds, reverse=True)[:5])
    print(f"executed {path} in {total:.0f} s (slowest: {slowest})")


if __name__ == "__main__":
    os.environ.pop("COURSE_QUICK", None)
    for name in sys.argv[1:]:
        execute(Path(name))
