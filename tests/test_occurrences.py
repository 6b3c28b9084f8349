import pytest

from contextlens import EmptyTextError, MarkerError, Occurrence, TargetNotFoundError, find_word, locate, parse_marked
from contextlens.errors import InputError


def test_marker_syntax_strips_brackets_and_spans_the_word():
    occ = parse_marked("The river [bank] flooded.")
    assert occ.text == "The river bank flooded."
    assert occ.word == "bank"
    assert (occ.start, occ.end) == (10, 14)
    assert occ.marked() == "The river [bank] flooded."


def test_marker_keeps_surrounding_whitespace_out_of_the_span():
    occ = parse_marked("The [ bank ] flooded.")
    assert occ.word == "bank"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("The [bank flooded.", "unbalanced"),
        ("The bank] flooded.", "unbalanced"),
        ("The [bank] by the [bank].", "2 marked targets"),
        ("The [] flooded.", "empty"),
        ("The ]bank[ flooded.", "before"),
        ("The bank flooded.", "no [marked] target"),
    ],
)
def test_marker_errors_say_what_to_do(text, fragment):
    with pytest.raises(MarkerError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        parse_marked(text)


def test_find_word_is_whole_word_and_case_insensitive():
    text = "Banks said the Bank near the embankment and the bank."
    first = find_word(text, "bank")
    assert first.word == "Bank"
    second = find_word(text, "bank", 1)
    assert second.word == "bank" and second.start == text.rindex("bank")
    assert find_word(text, "bank", -1) == second


def test_missing_target_names_close_words():
    with pytest.raises(TargetNotFoundError, match="banks"):
        find_word("The banks were closed.", "bank")


def test_occurrence_index_out_of_range():
    with pytest.raises(TargetNotFoundError, match="occurs 1 time"):
        find_word("The bank.", "bank", 3)


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_empty_text(text):
    with pytest.raises(EmptyTextError):
        locate(text, "bank")
    with pytest.raises(EmptyTextError):
        parse_marked(text)


def test_span_constructor_validates():
    assert Occurrence.from_span("The bank.", 4, 8).word == "bank"
    with pytest.raises(InputError):
        Occurrence.from_span("The bank.", 4, 40)
    with pytest.raises(InputError):
        Occurrence.from_span("The bank.", 3, 4)  # only a space


def test_locate_refuses_markers_and_word_together():
    with pytest.raises(MarkerError):
        locate("The [bank].", "bank")
    assert locate("The bank.", "bank").word == "bank"
    assert locate("The [bank].").word == "bank"
