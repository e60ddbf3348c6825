"""Two endpoints for programs and agents: ``/token_relevance`` (which tokens each reward depends on) and
``/score_response`` (each verifier's reward and reason). They answer in plain JSON, unlike the tabs' endpoints
(token views, figures), and take a verifier's arguments as values, so a free prompt works without the app's fields.

With ``MRTPO_MCP=1`` the app also serves them as MCP tools through Gradio's built-in MCP server
(``/gradio_api/mcp/``); the tabs' endpoints are marked with :func:`not_a_tool`, so an agent sees these two only.
The tool descriptions are the docstrings below (Gradio reads their ``Args``); both answer JSON text (Gradio's MCP
server would send a dict as its Python repr).
"""

from __future__ import annotations

import json
from typing import Optional

from .. import viz
from ..settings import default_checkpoint
from ..tasks import get_verifier
from .arguments import information, with_values
from .errors import readable
from .example_picker import get_example, prompt_text, with_prompt
from .input_limits import MAX_VERIFIERS, check_text, check_token_count, limits
from .policy_choice import get_policy
from .zerogpu import gpu

TOP = 5
"""Most relevant tokens listed per verifier."""


def not_a_tool(fn):
    """Keep a tab's endpoint out of the MCP tools (still in the API). Gradio 6 lists every named endpoint as a
    tool unless its function's ``_mcp_type`` says otherwise (``gradio/mcp.py``, ``list_tools``); the test of the
    tool list fails if that changes."""
    fn._mcp_type = "ui"
    return fn


def _example(
    task: str, example: int, prompt: str, verifiers: list[str], arguments: Optional[dict], need_prompt: bool = True
):
    names = list(verifiers or [])
    if not names or len(names) > MAX_VERIFIERS:
        raise ValueError(f"Give 1 to {MAX_VERIFIERS} verifier names, got {len(names)}.")
    for name in names:
        get_verifier(name)  # a KeyError that lists the known verifiers
    if arguments is not None and not isinstance(arguments, dict):
        raise ValueError("arguments must be an object: verifier name -> {argument: value}")
    ex = get_example(task, example)
    ex = with_prompt(ex, prompt) if prompt else ex
    if need_prompt and not prompt_text(ex).strip():
        raise ValueError("A free prompt (example -1) needs a prompt.")
    return with_values(ex, names, arguments or {})


@gpu("replay")
@readable
def token_relevance(
    response: str,
    verifiers: list[str],
    task: str = "tool_calling",
    example: int = 0,
    prompt: str = "",
    arguments: Optional[dict] = None,
    metric: str = "js",
    control: str = "none",
    checkpoint: str = "",
) -> str:
    """Which tokens of a response each verifier's reward depends on: the policy replays the response with and
    without each verifier's information, and a token's relevance is the Jensen-Shannon distance between its two
    next-token distributions (0 = the information changes nothing there, 1 = the most it can).

    Args:
        response: the model's response to analyse.
        verifiers: verifier names, 1 to 6, e.g. ["tool_call.format", "tool_call.correctness"].
        task: the task family: tool_calling, text_to_sql or instruction_following.
        example: index of a test example of the task (its prompt and gold arguments), or -1 for a free prompt.
        prompt: the user prompt; empty keeps the example's.
        arguments: for a free prompt, each verifier's argument values, e.g.
            {"sql.execution": {"db": "shop", "gold_sql": "SELECT name FROM products"}}.
        metric: js, kl or tvd.
        control: none, placebo, corrupted or others.
        checkpoint: the policy; empty for the app's default.
    Returns:
        JSON: the tokens; per verifier its reward, reason, relevance per token and its most relevant tokens as
        [position, token, relevance]; the verifiers that need input (not replayed).
    """
    from ..relevance import replay

    ex, needs = _example(task, int(example), prompt, verifiers, arguments)
    response = check_text("response", response, limits().max_chars)
    ready = [n for n in verifiers if n not in needs and information(get_verifier(n), ex) is not None]
    if not ready:
        raise ValueError(f"Every verifier needs input: {needs}. Give their arguments (or an example index).")
    policy = get_policy(checkpoint or default_checkpoint())
    infos = {n: information(get_verifier(n), ex) for n in ready}
    check_token_count(policy, prompt_text(ex), response, *infos.values())
    rel = replay(policy, ex, response, ready, infos=infos, metric=metric, control=control)
    per = {}
    for k, name in enumerate(rel.verifiers):
        scores = [viz.round_sig(s) for s in rel.scores[k].tolist()]
        top = sorted(range(rel.T), key=lambda t: -rel.scores[k, t])[:TOP]
        per[name] = {
            "reward": rel.rewards.get(name),
            "reason": rel.reasons.get(name, ""),
            "relevance": scores,
            "top_tokens": [[t, rel.tokens[t], scores[t]] for t in top],
        }
    return json.dumps(
        {"tokens": rel.tokens, "metric": rel.metric, "control": rel.control, "verifiers": per, "needs_input": needs},
        ensure_ascii=False,
    )


@readable
def score_response(
    response: str,
    verifiers: list[str],
    task: str = "tool_calling",
    example: int = 0,
    prompt: str = "",
    arguments: Optional[dict] = None,
) -> str:
    """Each verifier's reward (0 to 1) and reason for a response; no model is run.

    Args:
        response: the model's response to score.
        verifiers: verifier names, 1 to 6, e.g. ["ifeval.lowercase", "ifeval.no_comma"].
        task: the task family: tool_calling, text_to_sql or instruction_following.
        example: index of a test example of the task (its gold arguments), or -1 for a free prompt.
        prompt: the user prompt; empty keeps the example's.
        arguments: for a free prompt, each verifier's argument values, e.g.
            {"sql.execution": {"db": "shop", "gold_sql": "SELECT name FROM products"}}.
    Returns:
        JSON: per verifier its reward and reason (reward null and the reason "needs input: ..." where it lacks
        arguments).
    """
    ex, needs = _example(task, int(example), prompt, verifiers, arguments, need_prompt=False)
    response = check_text("response", response, limits().max_chars)
    out = {}
    for name in verifiers:
        if name in needs:
            out[name] = {"reward": None, "reason": f"needs input: {', '.join(needs[name])}"}
        else:
            verdict = get_verifier(name).check(response, ex)
            out[name] = {"reward": viz.round_sig(verdict.score), "reason": verdict.reason}
    return json.dumps(out, ensure_ascii=False)


TOOLS = (token_relevance, score_response)
"""The endpoints served as MCP tools (``api_name`` = function name)."""
