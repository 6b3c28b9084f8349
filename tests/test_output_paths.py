"""The shared output-path check: the final path, or one line saying what to change, before the work."""

from __future__ import annotations

import pytest

from contextlens.errors import InputError, OutputPathError
from contextlens.reports.output_paths import FIGURE_SUFFIXES, check_output_folder, check_output_path


def test_a_good_path_is_returned_with_its_default_suffix(tmp_path):
    assert check_output_path(tmp_path / "fig", FIGURE_SUFFIXES) == tmp_path / "fig.png"
    assert check_output_path(tmp_path / "fig.svg", FIGURE_SUFFIXES) == tmp_path / "fig.svg"
    assert check_output_path(str(tmp_path / "f.PNG"), (".png",)) == tmp_path / "f.PNG"
    assert list(tmp_path.iterdir()) == []  # checking writes nothing


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("f.xyz", "use .png or .svg or .pdf"),
        ("missing/f.png", "does not exist"),
        ("afile/f.png", "is a file"),
        ("adir", "is a folder"),
    ],
)
def test_bad_paths_are_one_line_errors(tmp_path, name, needle):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir.png").mkdir()
    with pytest.raises(OutputPathError, match=needle) as err:
        check_output_path(tmp_path / name, FIGURE_SUFFIXES)
    assert "\n" not in str(err.value) and isinstance(err.value, InputError)


def test_an_unwritable_parent_is_refused():
    with pytest.raises(OutputPathError, match="not writable"):
        check_output_path("/proc/f.png", FIGURE_SUFFIXES)
    with pytest.raises(OutputPathError, match="not writable"):
        check_output_folder("/proc/new-index")


def test_output_folders(tmp_path):
    assert check_output_folder(tmp_path / "a" / "b") == tmp_path / "a" / "b"  # created on write
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputPathError, match="is a file"):
        check_output_folder(tmp_path / "f")
    with pytest.raises(OutputPathError, match="is a file"):
        check_output_folder(tmp_path / "f" / "sub")
