"""The replay's argument checks: verifiers given as one name, none, or twice; a message that is not text."""

import pytest

from mrtpo_viz.relevance.engine import check_texts, resolve_verifiers
from mrtpo_viz.tasks import get_verifier


def test_one_name_or_one_verifier_is_a_list_of_one():
    assert [v.name for v in resolve_verifiers("ifeval.no_comma")] == ["ifeval.no_comma"]
    v = get_verifier("ifeval.no_comma")
    assert resolve_verifiers(v) == [v]


def test_no_verifier_is_refused():
    with pytest.raises(ValueError, match="give at least one verifier"):
        resolve_verifiers([])


def test_a_repeated_verifier_is_refused():
    with pytest.raises(ValueError, match=r"verifier names repeat: \['ifeval.no_comma', 'ifeval.no_comma'\]"):
        resolve_verifiers(["ifeval.no_comma", get_verifier("ifeval.no_comma")])


@pytest.mark.parametrize(
    "messages, infos, template, said",
    [
        ([{"role": "user", "content": None}], {}, "{info}", r"message 1 \(user\) must be text, got NoneType"),
        ([{"role": "user", "content": "hi"}], {"v": 3}, "{info}", "the information for v must be text, got int"),
        ([{"content": "hi"}], {}, ["{info}"], "the template must be text, got list"),
    ],
)
def test_a_field_that_is_not_text_is_named(messages, infos, template, said):
    with pytest.raises(ValueError, match=said):
        check_texts(messages, infos, template)
