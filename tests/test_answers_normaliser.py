"""membench.metrics.answers by hand: each normalisation rule, each extractiveness rule, and the
token-boundary test, on the tricky cases the module docstring names."""

from __future__ import annotations

import pytest

from membench.metrics.answers import MAX_WORDS, needles, normalise, occurs


def same(a: str, b: str) -> bool:
    return normalise(a) == normalise(b)


# ----------------------------------------------------------------------------- normalise


def test_unicode_case_and_whitespace():
    assert normalise("  Straße\t\nCAFÉ  ") == "strasse café"
    assert normalise("ﬁnal") == "final"  # NFKC ligature
    assert normalise("１２３") == "123"  # NFKC full-width digits
    assert same("3\u20134", "3-4") and same("3\u22124", "3-4")  # en dash, minus sign
    assert normalise("\u201cquoted\u201d \u2018too\u2019") == "quoted too"


@pytest.mark.parametrize("form", ["1,200", "1200", "1.2k", "1.2K", "1,200.0", "1.2 thousand"])
def test_thousands_and_k_are_one_number(form):
    assert normalise(form) == "1200"


def test_comma_separates_when_not_a_thousands_group():
    assert normalise("3,4") == "3 4"
    assert normalise("2019,2020") == "2019 2020"
    assert normalise("1,234,567 and 10,000") == "1234567 and 10000"


@pytest.mark.parametrize("form", ["3m", "3M", "3 million", "3million", "3,000,000", "3000000"])
def test_millions(form):
    assert normalise(form) == "3000000"


def test_other_magnitudes_and_what_is_not_one():
    assert normalise("$2bn") == normalise("2 billion") == "2000000000"
    assert normalise("1.5 trillion") == "1500000000000"
    assert normalise("$8.8 billion") == "8800000000"  # not 8.8: a stated cost
    assert normalise("3 m") == "3 m"  # a suffix must be attached
    assert normalise("5km 10am 3mm") == "5km 10am 3mm"  # letters after: no magnitude


@pytest.mark.parametrize(
    "form", ["50%", "50 %", "50 percent", "50 per cent", "50 Percent", "50.0%"]
)
def test_percent_forms(form):
    assert normalise(form) == "50 percent"


def test_decimals():
    assert normalise("12.0") == "12"
    assert normalise("12.50") == "12.5"
    assert normalise("12.05") == "12.05"
    assert normalise(".5") == normalise("0.5") == "0.5"
    assert normalise("It was 12.5.") == "it was 12.5"  # the full stop is punctuation
    assert normalise("1,200.50") == "1200.5"


def test_punctuation_becomes_a_space():
    assert normalise("U.S.") == "u s"
    assert not same("U.S.", "us")  # the pronoun stays apart
    assert not same("U.S.", "US")  # the stated cost of the rule
    assert same("U.S.", "U. S.")
    assert normalise("Caroline's dog") == "caroline s dog"
    assert normalise("snake_case, (x) & y!") == "snake case x y"
    assert normalise("-5") == "5"  # a sign is punctuation


def test_joiners_kept_only_between_digits():
    assert normalise("2015-03-24") == "2015-03-24"
    assert normalise("3/4 at 1:15") == "3/4 at 1:15"
    assert normalise("covid-19, a/b, 7-") == "covid 19 a b 7"


# ----------------------------------------------------------------------------- needles


def test_no_answer_is_not_extractive():
    assert needles(None, "none") is None
    assert needles("x y", "none") is None
    assert needles("?!", "str") is None  # nothing left
    assert needles("", "str") is None


@pytest.mark.parametrize("answer", ["yes", "No", "TRUE", "false.", True, False])
def test_yes_no_is_not_extractive(answer):
    assert needles(answer, "str") is None


@pytest.mark.parametrize(
    "answer,fmt", [("2", "int"), (7, "int"), ("a", "str"), (5.0, "float"), ("$5", "str")]
)
def test_one_character_is_not_extractive(answer, fmt):
    assert needles(answer, fmt) is None


def test_long_answers_are_summaries():
    assert needles(" ".join(["word"] * MAX_WORDS), "str") == [" ".join(["word"] * MAX_WORDS)]
    assert needles(" ".join(["word"] * (MAX_WORDS + 1)), "str") is None


def test_scalar_answers():
    assert needles(75, "int") == ["75"]
    assert needles(8.8, "float") == ["8.8"]
    assert needles(1e-05, "float") == ["0.00001"]
    assert needles(float("nan"), "float") is None
    assert needles("0.5%", "float") == ["0.5 percent"]
    assert needles("The Godfather", "str") == ["the godfather"]
    # commas in a str answer do not make it a list
    assert needles("divorce, job loss, homelessness", "str") == ["divorce job loss homelessness"]


def test_list_answers():
    assert needles("['gray', 'red']", "list") == ["gray", "red"]
    assert needles("['90%', '42%', '39%']", "list") == ["90 percent", "42 percent", "39 percent"]
    assert needles(["Home", "home", "Features"], "list") == ["home", "features"]  # no repeats
    assert needles("[['ab', 12], ['cd', 34]]", "list") == ["ab", "12", "cd", "34"]
    assert needles("0.66", "list") == ["0.66"]  # a literal of one value
    # every element must be extractive, else the list is not
    assert needles("['A', 'B']", "list") is None
    assert needles("['red', 'yes']", "list") is None
    assert needles("[]", "list") is None
    assert needles("gray and red", "list") is None  # no list literal


# ----------------------------------------------------------------------------- occurs


def test_token_boundaries():
    assert not occurs(["12"], "123 apples")
    assert not occurs(["12"], "12.5 apples")
    assert not occurs(["12"], "A12")
    assert occurs(["12"], "(12) apples")
    assert occurs(["12"], "12.0 apples")
    assert occurs(["new york"], "in New  York, NY")
    assert not occurs(["new york"], "newyork")


def test_number_forms_meet():
    assert occurs(needles("1,200", "int"), "about 1200 people")
    assert occurs(needles("1200", "int"), "about 1.2k people")
    assert occurs(needles("1.2k", "str"), "about 1,200 people")
    assert occurs(needles("3 million", "str"), "$3M raised")
    assert occurs(needles("50%", "str"), "50 per cent of adults")
    assert occurs(needles(12, "int"), "grew 12.0 points")
    assert occurs(needles(50, "int"), "50% of adults")  # the number of a percentage
    assert not occurs(needles("50%", "str"), "50 adults")  # but not the other way


def test_a_number_inside_a_date_is_not_found_alone():
    assert not occurs(needles("24", "int"), "filed on 2015-03-24")
    assert not occurs(needles("2015", "int"), "filed on 2015-03-24")
    assert occurs(needles("24", "int"), "filed on March 24, 2015")
    assert occurs(needles("2015-03-24", "str"), "filed on 2015\u201303\u201324.")


def test_us_is_not_the_pronoun():
    assert occurs(needles("U.S.", "str"), "the U.S. economy")
    assert not occurs(needles("U.S.", "str"), "they told us")


def test_every_list_element_must_occur():
    n = needles("['gray', 'red']", "list")
    assert occurs(n, "a red car and a gray one")
    assert not occurs(n, "a red car")


def test_occurs_refuses_no_needles():
    with pytest.raises(ValueError, match="not extractive"):
        occurs([], "anything")
