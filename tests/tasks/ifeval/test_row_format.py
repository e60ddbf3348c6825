"""IFEval-format rows load as Examples as they are: ``load_examples("instruction_following", path=...)`` on a file
of hand-written rows in IFEval's format (HF-style None padding, JSON-string kwargs) and in the RLVR-style variants."""

import json
import math

import pytest

from mrtpo_viz.tasks import get_verifier, load_examples
from mrtpo_viz.tasks.ifeval.row_format import example_from_row, is_ifeval_row

PAD = {"num_highlights": None, "relation": None, "num_words": None, "end_phrase": None, "postscript_marker": None}
ROWS = [
    {
        "key": 1000,
        "prompt": "Write a 120+ word story about a lighthouse. Do not use any commas and highlight at "
        "least 2 sections with markdown, like *this part*.",
        "instruction_id_list": [
            "punctuation:no_comma",
            "detectable_format:number_highlighted_sections",
            "length_constraints:number_words",
        ],
        "kwargs": [dict(PAD), {**PAD, "num_highlights": 2}, {**PAD, "relation": "at least", "num_words": 120}],
    },
    {
        "key": 1001,
        "prompt": "Write a short letter to a neighbour, all in lowercase. End it with 'see you soon.'",
        "instruction_id_list": ["change_case:english_lowercase", "startend:end_checker"],
        "kwargs": [dict(PAD), {**PAD, "end_phrase": "see you soon."}],
    },
    {
        "key": 1002,
        "prompt": "Describe a market in two paragraphs; the second starts with 'However'. Add a P.S.",
        "instruction_id_list": ["length_constraints:nth_paragraph_first_word", "detectable_content:postscript"],
        "kwargs": '[{"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "However"}, {"postscript_marker": "P.S."}]',
    },
    {
        "key": 1003,
        "prompt": "Answer in Finnish: what is a sauna?",
        "instruction_id_list": ["language:response_language"],
        "kwargs": [{"language": "fi"}],
    },
    {
        "key": 1004,
        "prompt": "List three fruits.",
        "instruction_id_list": ["detectable_format:number_bullet_lists"],
        "kwargs": [{"num_bullets": None}],
    },  # its kwarg is missing: the verifier needs input, the row still loads
]
RLVR = [
    {
        "messages": [{"role": "user", "content": "Write a haiku. Wrap it in double quotes."}],
        "ground_truth": "[{'instruction_id': ['startend:quotation'], 'kwargs': [None]}]",
        "dataset": "ifeval",
    },
    {
        "messages": [{"role": "user", "content": "Name a river, fewer than 5 words."}],
        "ground_truth": json.dumps(
            {
                "instruction_id": ["length_constraints:number_words"],
                "kwargs": [{"num_words": 5, "relation": "less than"}],
            }
        ),
    },
    {
        "prompt": "Say hi. Use the letter h at least twice.",
        "instruction_id": ["keywords:letter_frequency"],
        "kwargs": [{"letter": "h", "let_frequency": 2, "let_relation": "at least"}],
    },
]


def _write(tmp_path, rows, name="ifeval.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ifeval_rows_load_as_examples(tmp_path):
    examples = load_examples("instruction_following", path=_write(tmp_path, ROWS))
    assert [e.id for e in examples] == ["1000", "1001", "1002", "1003", "1004"]
    first = examples[0]
    assert first.prompt == ROWS[0]["prompt"] and first.reference is None and first.meta["key"] == 1000
    assert first.verifiers == ("ifeval.no_comma", "ifeval.highlights", "ifeval.word_count")
    assert first.meta["constraints"] == [
        {"id": "punctuation:no_comma", "kwargs": {}},
        {"id": "detectable_format:number_highlighted_sections", "kwargs": {"num_highlights": 2}},
        {"id": "length_constraints:number_words", "kwargs": {"relation": "at least", "num_words": 120}},
    ]
    assert get_verifier("ifeval.word_count").info(first) == "Answer with at least 120 words."
    letter = examples[1]
    assert get_verifier("ifeval.ends_with").score("dear ann, it was nice. see you soon.", letter) == 1.0
    assert get_verifier("ifeval.lowercase").score("Dear Ann. See you soon.", letter) == 0.0
    market = examples[2]
    assert get_verifier("ifeval.paragraph_first_word").score("Stalls.\n\nHowever, rain.\nP.S. bye", market) == 1.0
    assert get_verifier("ifeval.postscript").args(market) == {"postscript_marker": "P.S."}
    verdict = get_verifier("ifeval.bullet_count").check("* apple", examples[4])
    assert math.isnan(verdict.score) and verdict.reason.startswith("needs input")
    assert load_examples("instruction_following", split="train", path=tmp_path / "ifeval.jsonl") == []


def test_rlvr_style_rows(tmp_path):
    haiku, river, hi = load_examples("instruction_following", path=_write(tmp_path, RLVR))
    assert haiku.prompt == RLVR[0]["messages"] and haiku.verifiers == ("ifeval.quotation",)
    assert get_verifier("ifeval.quotation").score('"old pond"', haiku) == 1.0
    assert river.meta["constraints"][0]["kwargs"] == {"num_words": 5, "relation": "less than"}
    assert get_verifier("ifeval.word_count").score("The Nile.", river) == 1.0
    assert get_verifier("ifeval.letter_frequency").score("Hi, hello!", hi) == 1.0


def test_a_repeated_id_gives_one_verifier_that_checks_every_entry():
    ex = example_from_row(
        {
            "prompt": "p",
            "instruction_id_list": ["length_constraints:number_words"] * 2,
            "kwargs": [{"num_words": 2, "relation": "at least"}, {"num_words": 4, "relation": "less than"}],
        }
    )
    assert ex.verifiers == ("ifeval.word_count",)
    assert [get_verifier("ifeval.word_count").score(r, ex) for r in ("a", "a b", "a b c d")] == [0, 1, 0]


@pytest.mark.parametrize(
    "row, message",
    [
        (
            {"prompt": "p", "instruction_id_list": ["count:word_count_range"], "kwargs": [{}]},
            "unknown IFEval instruction id(s) ['count:word_count_range']",
        ),
        ({"prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}, {}]}, "1 instruction ids"),
        ({"prompt": "", "instruction_id_list": ["punctuation:no_comma"]}, "non-blank 'prompt'"),
        ({"prompt": "p", "instruction_id_list": []}, "non-empty list"),
        (
            {"messages": [{"role": "user", "content": "x"}], "ground_truth": '{"func_name": "validate_lowercase"}'},
            "'func_name' format",
        ),
        ({"prompt": "p", "ground_truth": "not json ["}, "neither JSON nor a Python literal"),
    ],
)
def test_bad_rows_name_their_line(tmp_path, row, message):
    path = _write(tmp_path, [ROWS[0], row])
    with pytest.raises(ValueError, match=r"ifeval.jsonl:2: ") as e:
        load_examples("instruction_following", path=path)
    assert message in str(e.value)


def test_which_rows_are_ifeval_rows():
    assert is_ifeval_row(ROWS[0]) and is_ifeval_row(RLVR[0]) and is_ifeval_row(RLVR[2])
    assert not is_ifeval_row({"task": "instruction_following", "prompt": "p", "instruction_id_list": []})
    assert not is_ifeval_row({"prompt": "p"}) and not is_ifeval_row([1])
