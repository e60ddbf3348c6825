"""Custom verifiers: TRL adapters round-trip; declarative regex / keyword / JSON-schema verifiers and their spans."""

import math

import pytest

from mrtpo_viz.tasks.base import Example
from mrtpo_viz.tasks.example_sources import load_examples
from mrtpo_viz.tasks import Verdict, Verifier, get_verifier
from mrtpo_viz.tasks.custom import (
    DECLARATIVE_KINDS,
    MAX_PATTERN_CHARS,
    DeclarativeSpec,
    build_declarative,
    schema_errors,
)
from mrtpo_viz.tasks.base import as_trl_reward, verifier_from_trl

EX = Example(task="custom", prompt="What is 6 * 7?", meta={"solution": "42"})


def exact_match(completions, solution, **kwargs):
    """A TRL reward: 1 for the exact solution, None when no solution is given."""
    return [None if s is None else float(c.strip() == s) for c, s in zip(completions, solution)]


def length_penalty(completions, **kwargs):
    return [-len(c) / 10 for c in completions]


# --------------------------------------------------------------------------------------------- TRL adapters
@pytest.mark.parametrize("response,score", [("42", 1.0), (" 42\n", 1.0), ("41", 0.0), ("", 0.0), ("４２", 0.0)])
def test_from_trl_scores(response, score):
    v = Verifier.from_trl(exact_match, name="custom.exact", info="Answer with the number only.")
    assert v.score(response, EX) == score
    assert v.task == "custom" and v.title == "custom.exact" and v.info(EX) == "Answer with the number only."


def test_from_trl_none_is_nan_and_errors_are_zero():
    v = verifier_from_trl(exact_match, name="custom.exact", info="x")
    assert math.isnan(v.score("42", Example(task="custom", prompt="p", meta={"solution": None})))
    assert (
        v.check("42", Example(task="custom", prompt="p", meta={"solution": None})).reason
        == "does not apply to this example"
    )
    broken = verifier_from_trl(lambda completions, **kw: [1 / 0], name="custom.broken", info="x")
    assert broken.check("a", EX) == broken.check("b", EX)
    assert broken.score("a", EX) == 0.0 and "ZeroDivisionError" in broken.check("a", EX).reason
    wrong_len = verifier_from_trl(lambda completions, **kw: [1.0, 2.0], name="custom.two", info="x")
    with pytest.raises(ValueError, match="list of one value"):
        wrong_len.score("a", EX)
    with pytest.raises(ValueError, match="callable"):
        verifier_from_trl("not a function", name="custom.x", info="x")


def test_from_trl_passes_only_the_columns_a_function_names():
    seen = {}

    def strict(completions, prompts, solution):  # no **kwargs: extra columns would be a TypeError
        seen.update(prompts=prompts, solution=solution)
        return [0.5]

    assert verifier_from_trl(strict, name="custom.strict", info="x").score("a", EX) == 0.5
    assert seen == {"prompts": ["What is 6 * 7?"], "solution": ["42"]}


def test_trl_round_trip_gives_the_same_numbers():
    completions = ["42", "41", " 42 ", "forty-two"]
    prompts = ["p"] * 4
    solution = ["42", "42", "42", None]
    direct = exact_match(completions, solution=solution)
    reward = Verifier.from_trl(exact_match, name="custom.exact", info="x").as_trl_reward()
    assert reward.__name__ == "custom.exact"
    assert reward(prompts, completions, solution=solution) == direct == [1.0, 0.0, 1.0, None]
    assert as_trl_reward(verifier_from_trl(length_penalty, name="custom.len", info="x"))(
        prompts, completions
    ) == pytest.approx([-0.2, -0.2, -0.4, -0.9])


def test_trl_reward_of_a_task_verifier_and_back():
    examples = load_examples("text_to_sql")[:6]
    exe = get_verifier("sql.execution")
    responses = [ex.reference for ex in examples[:3]] + ["```sql\nSELECT 1\n```"] * 3
    reward = exe.as_trl_reward()
    columns = {"task": [ex.task for ex in examples], "meta": [ex.meta for ex in examples]}
    got = reward([ex.prompt for ex in examples], responses, completion_ids=None, **columns)
    assert got == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    back = Verifier.from_trl(reward, name="sql.execution_again", info="x", task="text_to_sql")
    assert [back.score(r, ex) for r, ex in zip(responses, examples)] == got
    conversational = [[{"role": "assistant", "content": r}] for r in responses]
    assert reward([ex.messages() for ex in examples], conversational, **columns) == got


# ---------------------------------------------------------------------------------------------- declarative
def spec(kind, **kw):
    return DeclarativeSpec(name=f"custom.{kind}", title=kind, info=f"{kind} info", kind=kind, **kw)


REGEX_CASES = [
    ("regex_must", r"\bfinal answer:", "Final answer: 42", True, 1.0),
    ("regex_must", r"\bfinal answer:", "Final answer: 42", False, 0.0),
    ("regex_must", r"\d+", "no digits here", False, 0.0),
    ("regex_must", r"\d+", "", False, 0.0),
    ("regex_must", r"^\s*$", "  \n ", False, 1.0),
    ("regex_must", r"café", "Un café ☕", False, 1.0),
    ("regex_must_not", r"(?i)as an ai", "As an AI, I cannot", False, 0.0),
    ("regex_must_not", r"(?i)as an ai", "Sure: 42", False, 1.0),
    ("regex_must_not", r"!", "", False, 1.0),
]


@pytest.mark.parametrize("kind,pattern,response,ignore_case,score", REGEX_CASES)
def test_regex_cases(kind, pattern, response, ignore_case, score):
    v = build_declarative(spec(kind, pattern=pattern, ignore_case=ignore_case))
    assert v.score(response, EX) == score and v.task == "custom" and v.info(EX) == f"{kind} info"


def test_regex_spans_are_the_matches():
    v = build_declarative(spec("regex_must_not", pattern=r"\bsorry\b", ignore_case=True))
    text = "Sorry, I am sorry."
    assert v.relevant_spans(text, EX) == [(0, 5), (12, 17)]
    assert v.check(text, EX).reason == "the pattern matches 2 time(s)"
    assert v.relevant_spans("fine", EX) == []


TIMEOUT = "the pattern took longer than 0.25 s on this response (catastrophic regex?)"


@pytest.mark.parametrize(
    "pattern,text,reason",
    [
        (r"(a+)+$", "a" * 40 + "!", "the pattern does not match"),  # the regex engine avoids this blow-up itself
        (r"(a|aa)+$", "a" * 60 + "!", TIMEOUT),  # ~fib(60) paths: stopped by the time budget
        (r"(a|a)+$", "a" * 60 + "!", TIMEOUT),  # 2**60 paths
    ],
)
def test_catastrophic_regex_returns_instead_of_hanging(pattern, text, reason):
    v = build_declarative(spec("regex_must", pattern=pattern))
    assert v.check(text, EX) == Verdict(0.0, reason)
    assert v.relevant_spans(text, EX) == (None if reason == TIMEOUT else [])
    assert v.score("aaaa", EX) == 1.0


def test_bad_specs_are_clear_value_errors():
    with pytest.raises(ValueError, match="at most"):
        spec("regex_must", pattern="a" * (MAX_PATTERN_CHARS + 1))
    with pytest.raises(ValueError, match="bad regex"):
        spec("regex_must", pattern="(unclosed")
    with pytest.raises(ValueError, match="needs a pattern"):
        spec("regex_must_not")
    with pytest.raises(ValueError, match="unknown declarative kind"):
        spec("python_code", pattern="x")
    with pytest.raises(ValueError, match="keywords"):
        spec("keywords", keywords=["ok", "  "])
    with pytest.raises(ValueError, match="unsupported keywords"):
        spec("json_schema", schema={"type": "string", "pattern": "^a"})
    with pytest.raises(ValueError, match="unknown type"):
        spec("json_schema", schema={"type": "float"})
    assert list(DECLARATIVE_KINDS) == ["regex_must", "regex_must_not", "keywords", "json_schema"]


@pytest.mark.parametrize(
    "response,score",
    [
        ("Paris is the capital of France.", 1.0),
        ("PARIS, france", 1.0),
        ("Paris only", 0.5),
        ("Parisian cuisine in Francefood", 0.0),  # whole words only
        ("", 0.0),
    ],
)
def test_keywords_score_the_fraction_present(response, score):
    v = build_declarative(spec("keywords", keywords=["paris", "France"]))
    assert v.score(response, EX) == score


def test_keyword_spans_and_reason():
    v = build_declarative(spec("keywords", keywords=["blue sky", "cat"]))
    text = "A cat under a Blue Sky; cats and a cat."
    assert [text[a:b] for a, b in v.relevant_spans(text, EX)] == ["cat", "Blue Sky", "cat"]
    assert v.check("a cat", EX).reason == "1 of 2 keywords present; missing: blue sky"


SCHEMA = {
    "type": "object",
    "required": ["city", "days"],
    "additionalProperties": False,
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"enum": ["metric", "imperial"]},
        "stops": {
            "type": "array",
            "maxItems": 2,
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        },
    },
}


@pytest.mark.parametrize(
    "response,score",
    [
        ('{"city": "Paris", "days": 3}', 1.0),
        ('```json\n{"city": "東京", "days": 3, "units": "metric"}\n```', 1.0),
        ('  {"city": "Oslo", "days": 2.0, "stops": [{"name": "A"}, {"name": "B"}]}  ', 1.0),
        ('{"city": "Paris", "days": "3"}', 0.0),  # a number given as a string
        ('{"city": "Paris", "days": 30}', 0.0),
        ('{"city": "Paris", "days": true}', 0.0),
        ('{"city": "Paris"}', 0.0),
        ('{"city": "Paris", "days": 3, "extra": 1}', 0.0),
        ('{"city": "Paris", "days": 3, "units": "kelvin"}', 0.0),
        ('{"city": "Oslo", "days": 2, "stops": [{"name": "A"}, {"title": "B"}]}', 0.0),  # nested required
        ('{"city": "Oslo", "days": 2, "stops": [{"name": "A"}, {"name": "B"}, {"name": "C"}]}', 0.0),
        ('["Paris", 3]', 0.0),
        ('{"city": "Paris", "days": 3', 0.0),
        ("", 0.0),
        ("[" * 100000, 0.0),
    ],
)
def test_json_schema_cases(response, score):
    assert build_declarative(spec("json_schema", schema=SCHEMA)).score(response, EX) == score


def test_json_schema_reasons_and_spans():
    v = build_declarative(spec("json_schema", schema=SCHEMA))
    assert v.check('{"city": "Paris", "days": "3"}', EX).reason == '$.days should be of type integer, got "3"'
    assert schema_errors({"stops": [{}]}, SCHEMA) == [
        "$ is missing the key 'city'",
        "$ is missing the key 'days'",
        "$.stops[0] is missing the key 'name'",
    ]
    text = 'Here: ```json\n{"city": "Rome", "days": 2}\n```'
    assert [text[a:b] for a, b in v.relevant_spans(text, EX)] == ['"city"', '"days"']
    assert v.relevant_spans("not json", EX) == [(0, 8)]
