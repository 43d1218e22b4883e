"""Re-run chapter notebooks in place so their stored outputs (what the website shows) are fresh.

    python tools/execute_notebooks.py chapters/*.ipynb      (what `make execute` runs)

Runs the full version (COURSE_QUICK is cleared) and records no per-cell timestamps, so a
re-run changes a notebook only where its outputs change. Cells tagged ``data-output`` show
text from a data set (IMDB reviews): their outputs are dropped before saving, because the
course does not republish the data; a reader sees them when running the notebook.
"""

import os
import sys
from pathlib import Path

import nbclient
import nbformat


def execute(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    # coalesce_streams: one output per stream, progress bars' carriage returns applied (the page
    # shows each bar's final state, as Jupyter does, not every update)
    client = nbclient.NotebookClient(notebook, timeout=3600, record_timing=False, coalesce_streams=True,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)  # timestamps an older run may have left
        if "data-output" in cell.metadata.get("tags", []):
            cell.outputs = []
    nbformat.write(notebook, path)
    print(f"executed {path}")


if __name__ == "__main__":
    os.environ.pop("COURSE_QUICK", None)
    for name in sys.argv[1:]:
        execute(Path(name))
