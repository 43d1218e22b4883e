"""The public API: everything exported, each object documented with its chapter."""

import inspect

import companion


def test_all_names_exist():
    for name in companion.__all__:
        assert hasattr(companion, name), name


def test_every_public_callable_names_its_chapter():
    missing = [
        name
        for name in companion.__all__
        if callable(getattr(companion, name)) and "chapter" not in (inspect.getdoc(getattr(companion, name)) or "")
    ]
    assert not missing, f"docstrings without the chapter that introduces them: {missing}"
