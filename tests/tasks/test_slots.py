"""The slots family: each reward reads two tokens of its own part (the header's city and the code), its information
is that one fact, and its relevant spans are exactly those decision tokens (one token each in the bundled
tokenizer)."""

import random

import pytest

from mrtpo_viz.tasks import get_verifier, list_verifiers, load_examples
from mrtpo_viz.tasks.generators import slots as gen
from mrtpo_viz.tasks.slots import CODE_OF, CODES, VERIFIERS, decision

EX = gen.generate(1, seed=3)[0]
LINES = [
    "Part 1, {city}: rain snow {code} moon.",
    "Part 2, {city}: {code} fish bees.",
    "Part 3, {city}: calm quiet waves {code}.",
    "Part 4, {city}: trees {code} salt.",
]


def _response(codes, cities=None):
    cities = cities or EX.meta["cities"]
    return "\n".join(line.format(city=t, code=c) for line, t, c in zip(LINES, cities, codes))


def test_registered_with_information_naming_one_fact_each():
    assert list(VERIFIERS) == [f"slots.part{k}" for k in range(1, 5)]
    assert list_verifiers("slots") == [*VERIFIERS, "slots.weather"]  # the control arm's whole-response reward
    assert EX.verifiers == VERIFIERS  # examples carry the four parts; the control arm adds the weather reward
    cities, codes = EX.meta["cities"], EX.meta["codes"]
    assert codes == [CODE_OF[c] for c in cities] and len(set(cities)) == 4
    for k, name in enumerate(VERIFIERS):
        info = get_verifier(name).info(EX)
        assert info == f"Part {k + 1} must name {cities[k]}'s code, which is {codes[k]}."
        assert all(c not in info for c in codes if c != codes[k])  # only fact k
    assert all(c in EX.prompt for c in cities) and not any(c in EX.prompt for c in CODES)


def test_each_reward_reads_only_its_own_part():
    codes = EX.meta["codes"]
    right = _response(codes)
    assert [get_verifier(v).score(right, EX) for v in VERIFIERS] == [1.0] * 4
    for k in range(4):  # one wrong code fails exactly that reward: the rewards are independent
        wrong = list(codes)
        wrong[k] = next(c for c in CODES if c not in codes)
        assert [get_verifier(v).score(_response(wrong), EX) for v in VERIFIERS] == [float(j != k) for j in range(4)]
    swapped = _response([codes[1], codes[0], codes[2], codes[3]])
    assert [get_verifier(v).score(swapped, EX) for v in VERIFIERS] == [0.0, 0.0, 1.0, 1.0]
    no_code = right.replace(codes[2], "honey")
    assert get_verifier("slots.part3").check(no_code, EX).reason == "part 3 names no code"
    cities = EX.meta["cities"]
    other = next(c for c in CODE_OF if c not in cities)
    wrong_city = _response(codes, [cities[0], other, cities[2], cities[3]])
    assert [get_verifier(v).score(wrong_city, EX) for v in VERIFIERS] == [1.0, 0.0, 1.0, 1.0]
    assert get_verifier("slots.part2").check(wrong_city, EX).reason == f"part 2's header names {other}, not {cities[1]}"
    assert get_verifier("slots.part1").score(right.replace(f"Part 1, {cities[0]}:", "Part 1:"), EX) == 0.0
    assert get_verifier("slots.part4").check(right.split("\nPart 4")[0], EX).score == 0.0
    with pytest.raises(ValueError, match="needs meta 'cities' and 'codes'"):
        get_verifier("slots.part1").info(type(EX)(task="slots", prompt="x"))


def test_each_span_is_the_decision_token():
    from transformers import AutoTokenizer

    from mrtpo_viz.relevance.tokens import display_tokens
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    tok = AutoTokenizer.from_pretrained(BUNDLED_POLICY_DIR)
    rng = random.Random(0)
    for ex in load_examples("slots", "test")[:20]:
        codes = [c if rng.random() < 0.5 else gen.wrong_code(c, rng) for c in ex.meta["codes"]]
        text = gen.response(ex.meta["cities"], codes, rng)
        offsets = display_tokens(tok, tok(text, add_special_tokens=False)["input_ids"])[1]
        for k, name in enumerate(VERIFIERS):
            (cs, ce), (s, e) = get_verifier(name).relevant_spans(text, ex)
            assert text[cs:ce] == ex.meta["cities"][k] and text[s:e] == codes[k] == decision(text, k + 1)[0]
            for a0, b0 in ((cs, ce), (s, e)):
                hit = [t for t, (a, b) in enumerate(offsets) if a < b0 and a0 < b]
                assert len(hit) == 1, (name, text[a0:b0], hit)  # each decision is one token of the response
    # a part without a code: its text is the span (the absence decided); no part at all: no span
    text = _response(EX.meta["codes"]).replace(EX.meta["codes"][1], "fish")
    city = EX.meta["cities"][1]
    start = text.index(f"Part 2, {city}:")
    assert get_verifier("slots.part2").relevant_spans(text, EX) == [
        (start + 8, start + 8 + len(city)),
        (start + 9 + len(city), text.index("\nPart 3")),
    ]
    assert get_verifier("slots.part4").relevant_spans("Part 1: GBP.", EX) == []


def test_references_are_long_and_load_from_the_sample_file():
    train, test = load_examples("slots", "train"), load_examples("slots", "test")
    assert (len(train), len(test)) == (300, 100)
    assert not {str(e.prompt) for e in train} & {str(e.prompt) for e in test}
    words = [len(e.reference.split()) for e in test]
    assert min(words) == max(words) == 4 * (3 + gen.WORDS_PER_PART + 1)  # "Part k, City:" + filler + code
    assert all(f"Part {k}, {c}:" in e.reference for e in test for k, c in enumerate(e.meta["cities"], 1))


def test_fine_tuning_rows_weigh_the_four_code_tokens_and_noise_only_uninformed_parts():
    from transformers import AutoTokenizer

    from mrtpo_viz.sample_policy.slots_policy import CODE_WEIGHT, sft_examples, weighted_rows
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    tok = AutoTokenizer.from_pretrained(BUNDLED_POLICY_DIR)
    examples = sft_examples(40, seed=0)
    for ex, (ids, n_prompt, w) in zip(examples, weighted_rows(tok, examples)):
        assert len(w) == len(ids) - n_prompt and ids[-1] == tok.eos_token_id
        heavy = [tok.decode([ids[n_prompt + i]]).strip() for i, x in enumerate(w) if x == CODE_WEIGHT]
        assert heavy == [decision(ex.response, k)[0] for k in range(1, 5)]
        scores = {v: get_verifier(v).score(ex.response, ex.example) for v in VERIFIERS}
        assert {v for v, r in scores.items() if r == 0.0} == set(ex.noised)  # wrong codes only where noised
        assert not set(ex.noised) & set(ex.present)  # an informed part is always right
    share = sum(len(ex.noised) for ex in examples) / sum(4 - len(ex.present) for ex in examples)
    assert 0.4 < share < 0.8  # P_WRONG = 0.6 of the uninformed parts (160 parts: a loose band)


def test_the_conflict_recipe_opens_with_a_mode_that_sets_which_pair_goes_wrong():
    """Conflict recipe: a ``Mode A.``/``Mode B.`` first line, and uninformed parts wrong with P_WRONG_CONFLICT[0] in
    the pair the mode sets, [1] in the other: the pairs' rewards anti-correlate; the main recipe's data is as before
    (no mode line, independent parts)."""
    from mrtpo_viz.sample_policy.slots_eval import pair_correlation
    from mrtpo_viz.sample_policy.slots_policy import P_WRONG_CONFLICT, sft_examples

    examples = sft_examples(600, seed=0, conflict=P_WRONG_CONFLICT)
    rates = {("A", True): [], ("A", False): [], ("B", True): [], ("B", False): []}
    pairs = []
    for ex in examples:
        first = ex.response.split("\n")[0]
        assert first in ("Mode A.", "Mode B.") and ex.response.count("\n") == 4
        for k, v in enumerate(VERIFIERS):
            if v not in ex.present:
                rates[(first[5], k < 2)].append(v in ex.noised)
        if not ex.present:
            scores = [get_verifier(v).score(ex.response, ex.example) for v in VERIFIERS]
            pairs.append((sum(scores[:2]), sum(scores[2:])))
    share = {key: sum(x) / len(x) for key, x in rates.items()}
    # ~300 uninformed parts per cell: +-0.1 is over 3 standard errors of a rate near 0.3 or 0.9
    assert share[("A", True)] == pytest.approx(0.9, abs=0.1) and share[("B", False)] == pytest.approx(0.9, abs=0.1)
    assert share[("A", False)] == pytest.approx(0.3, abs=0.1) and share[("B", True)] == pytest.approx(0.3, abs=0.1)
    assert pair_correlation(pairs) < -0.3  # anti-correlated pairs (about -0.5 at these rates)
    plain = sft_examples(40, seed=0)
    assert not any(ex.response.startswith("Mode") for ex in plain) and all(ex.response.count("\n") == 3 for ex in plain)
    assert pair_correlation([(1, 1), (1, 1)]) is None and pair_correlation([(0, 2), (2, 0), (1, 1)]) == -1.0


def test_pass_rates_split_by_mode_and_count_cut_samples():
    """pass_rates on scripted samples: per-reward rates, the share cut at the budget, the pairs' correlation and,
    for the conflict recipe's mode lines, the rates per mode."""
    from types import SimpleNamespace

    from mrtpo_viz.sample_policy.slots_eval import pass_rates

    codes, wrong = EX.meta["codes"], [gen.wrong_code(c, random.Random(0)) for c in EX.meta["codes"]]
    texts = [
        "Mode A.\n" + _response(wrong[:2] + codes[2:]),  # A: parts 1-2 wrong
        "Mode B.\n" + _response(codes[:2] + wrong[2:]),  # B: parts 3-4 wrong
        "Mode B.\n" + _response(codes),
    ]

    class Scripted:
        def generate_group(self, example, n, **kw):
            assert kw["stop_after_lines"] == 5 and n == 3
            return [SimpleNamespace(text=t, token_ids=[0] * (160 if i == 2 else 90)) for i, t in enumerate(texts)]

    r = pass_rates(Scripted(), [EX], info=False, samples=3, stop_after_lines=5)
    assert r["rewards"] == {v: pytest.approx(2 / 3, abs=1e-4) for v in VERIFIERS} and r["n"] == 3
    assert r["truncated"] == pytest.approx(1 / 3, abs=1e-4)
    assert r["by_mode"] == {
        "A": {"n": 1, "rewards": [0.0, 0.0, 1.0, 1.0]},
        "B": {"n": 2, "rewards": [1.0, 1.0, 0.5, 0.5]},
    }
    assert r["pairs_corr"] == pytest.approx(-0.5, abs=1e-4)  # (0, 2), (2, 0), (2, 2)


def test_pass_rates_counts_a_cut_with_the_training_loops_rule():
    """A sample at the budget that its line count ended is not cut (``was_cut``); without a line count it is."""
    from types import SimpleNamespace

    from mrtpo_viz.sample_policy.slots_eval import pass_rates

    text = _response(EX.meta["codes"]) + "\nPart 5"  # a fifth line: the line count ended it

    class Scripted:
        def generate_group(self, example, n, **kw):
            return [SimpleNamespace(text=text, token_ids=[0] * kw["max_new_tokens"])] * n

    assert text.count("\n") >= 4
    assert pass_rates(Scripted(), [EX], info=False, samples=2, stop_after_lines=4)["truncated"] == 0.0
    assert pass_rates(Scripted(), [EX], info=False, samples=2)["truncated"] == 1.0


def test_the_whole_response_reward_counts_weather_words_over_every_part():
    """slots.weather: 1 iff the four parts use at least WEATHER_MIN weather words; every part's text decides the
    count, so its spans are the four parts (not one token)."""
    from mrtpo_viz.tasks.slots import WEATHER, WEATHER_MIN, part_span, weather_words

    v = get_verifier("slots.weather")
    codes, cities = EX.meta["codes"], EX.meta["cities"]
    base = _response(codes)  # rain, snow, waves: 3 weather words
    assert [w for w, _ in weather_words(base)] == ["rain", "snow", "waves"]
    assert v.check(base, EX).score == 0.0 and v.check(base, EX).reason == f"3 weather words (fewer than {WEATHER_MIN})"
    many = base.replace("trees", " ".join(["winter"] * (WEATHER_MIN - 3)))
    assert v.score(many, EX) == 1.0 and v.check(many, EX).reason == f"{WEATHER_MIN} weather words (at least 17)"
    assert v.score(many.replace("Part 1, ", "Intro, "), EX) == 0.0  # rain and snow leave with part 1's header
    assert v.relevant_spans(many, EX) == [part_span(many, k) for k in range(1, 5)]
    assert v.relevant_spans("no parts at all", EX) == [] and v.score("", EX) == 0.0
    assert v.info(EX) == f"Use at least {WEATHER_MIN} of the words {', '.join(WEATHER)} across the whole response."
    assert set(WEATHER) <= set(gen.FILLER) and not set(WEATHER) & set(CODES) and cities[0] not in WEATHER
