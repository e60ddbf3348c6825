"""Method tab: the formulas the app computes, marked as our reading of the paper, and the convergence study's
result ("Does token credit help?") from ``benchmarks/results/convergence.json`` when that file is present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import gradio as gr

from ..viz.study import is_study, study_figure, study_markdown

STUDY_RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "convergence.json"
"""Written by the retired convergence study's report (in a checkout; an installed wheel has no benchmarks)."""

LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]

METHOD_MD = r"""
## What the app computes

> **Our reading of the paper.** The formulas below are how this project implements MRTPO and the methods it is
> compared with. Where the paper is silent (the normalization of the token weights, the controls) the choice is ours
> and says so.

**Shapes.** $N$ prompts, $G$ completions per prompt, $K$ rewards, $T$ response tokens; rewards $r \in
\mathbb{R}^{N \times G \times K}$, reward weights $\lambda_k$ (default 1), $\epsilon = 10^{-4}$; standard deviations are
Bessel-corrected, as in TRL.

### GRPO (TRL's `sum_then_normalize`)
$$r = \sum_k \lambda_k r_k, \qquad A = \frac{r - \operatorname{mean}_G r}{\operatorname{std}_G r + \epsilon}$$

### GDPO (TRL's `normalize_then_sum`)
$$\hat A_k = \frac{r_k - \operatorname{mean}_G r_k}{\operatorname{std}_G r_k + \epsilon}, \qquad
S = \sum_k \lambda_k \hat A_k, \qquad
A = \frac{S - \operatorname{mean}_{\text{batch}} S}{\operatorname{std}_{\text{batch}} S + \epsilon}$$
Every token of a response gets the same $A$, whichever reward it came from.

### Relevance: replay with and without the verifier information
$$d[k, t] = \operatorname{JS}\big(\pi(\cdot \mid x, y_{<t}),\ \pi(\cdot \mid x + c_k, y_{<t})\big) \in [0, 1]$$
the Jensen-Shannon *distance* (base 2) between the policy's next-token distributions without and with verifier
$k$'s information $c_k$ in the prompt. No auxiliary model, no token labels. KL and total variation are offered too.

**Controls (ours).** Raw JS also follows the policy's own uncertainty where it ignores the information, so the
replay can hold each with-information branch against something else: *placebo* (minus the JS of a neutral block of
similar length), *corrupted* (another example's information instead of none), *others* (minus the mean JS of the
other verifiers, clipped at 0). The relevance tab shows raw and controlled relevance side by side.

### MRTPO token weights and advantages
$$\hat w[k, t] = T_i \, \frac{m_t \, d[k, t]^\gamma}{\sum_{t'} m_{t'} \, d[k, t']^\gamma}, \qquad
w[k, t] = (1 - \alpha) + \alpha \, \hat w[k, t]$$
$$A[t] = \frac{\sum_k \lambda_k \, w[k, t] \, \hat A_k - \operatorname{mean}_{\text{batch}} S}
{\operatorname{std}_{\text{batch}} S + \epsilon}$$
with $m$ the response mask and $T_i$ the response length; uniform weights where a reward's relevance is all ~0.
Defaults $\alpha = 1$, $\gamma = 1$.

*Our choice:* $\hat w$ sums to the response length, so $\alpha = 0$ gives GDPO exactly and the mean of $A[t]$ over a
response's tokens equals its GDPO advantage for every $\alpha, \gamma$. The advantage panel of the relevance tab
stacks $\lambda_k w[k, t] \hat A_k / (\operatorname{std} S + \epsilon)$ per reward: the stacks sum to $A[t]$.

**Mask normalization (ours, for the credit study).** The mean-preserving $\hat w$ multiplies a reward whose relevance
sits on $|S|$ tokens by about $T_i / |S|$ there: it changes the *scale* of the update as well as where it goes. The
`-mask` methods keep $\hat w[k, t] = (d[k, t] / \max_{t'} d[k, t'])^\gamma \in [0, 1]$ instead, so a hard span mask
puts each reward's $\hat A_k$ on its span tokens only, at its own size; `mrtpo:placebo` puts it on random tokens of
the same count.

### Loss
Token-level clipped surrogate ($\epsilon_{\text{clip}} = 0.2$), token mean over the batch (DAPO style), no KL term
by default.

### Links
- GDPO in TRL: `GRPOConfig(multi_objective_aggregation="normalize_then_sum")`.
- Source, tests and benchmarks: this repository's README.
"""


STUDY_MD = """## Does token credit help?

**On a task built to need it, credit on the deciding tokens helps; whether MRTPO's own relevance does is not
established.** The credit study (`studies/credit/`, `docs/study.md`) trains on `slots`, where one token decides each
of four independent rewards. There, credit on the deciding tokens makes single-batch gradients agree across batches
(cosine 0.5-0.6 for the oracles against 0.00 for GDPO; a placebo of the same sharpness 0.00-0.03, MRTPO's relevance
0.3), and over 14 seeds of 40 training steps the mask-only oracle beats GDPO on mean training reward by +0.127. The
seeds were extended from 6 to 14 after a first look, so that gain is read at the two-look level, where it holds
(Pocock interval [+0.035, +0.219]; combination test one-sided p = 0.002). MRTPO's raw JS relevance, with no labels
and at half GDPO's learning rate, gains +0.074, but its two-look interval is [-0.001, +0.149] (combined p = 0.020,
above the two-look level 0.0147): not established. Its share of the oracle's gain is 0.58, Fieller's interval
[0.11, 0.99] (two-look [-0.03, 1.09]). After 40 steps the held-out reward differs detectably for no method. The
placebo collapses (-0.41); where a whole-response reward decides (a control arm), MRTPO loses to GDPO on that reward
(-0.16). A confirmatory round (one learning rate for every method, an MRTPO-matched placebo, three builds of the
policy, fixed seeds, one look) settles it: at the same rate MRTPO does not beat GDPO (training reward -0.020
[-0.105, +0.066], held-out -0.024 [-0.119, +0.070]), though it beats its own weights shuffled (+0.204), and the
oracle does not beat GDPO on those builds (+0.015 [-0.035, +0.065]).
**Where there is little to credit, it does not help**: on the bundled policy's three families, rerun with the
fixes (no truncation, spans on the deciding tokens), no oracle beats GDPO (-0.016 to +0.007); MRTPO trails it by
0.016-0.035 at half GDPO's learning rate and is within 0.02 of it at the same rate. An arm where one early token
makes the parts fail against each other is inconclusive at 6 seeds.

**The earlier convergence study** (below: GRPO, GDPO, MRTPO raw and with the `others` control, a span **oracle** and
an **entropy** baseline that knows no verifier, on every task family of the bundled policy and on
SmolLM2-135M-Instruct, several seeds each, paired by seed; its code is retired, its results are below) cannot say
whether token credit helps: on its arms 40-token responses were often cut (truncation decides many rewards), and the
oracle's spans mark what a verifier reads rather than the tokens that decide its verdict. Its oracle is not an upper
bound on token credit, so its "no headroom" is a statement about those span labels and settings."""


def study_results(path: Path = STUDY_RESULTS) -> Optional[dict]:
    """The study's results, or None when the file is missing, unreadable or of another format (the tab then
    says "not run yet")."""
    try:
        results = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return results if is_study(results) else None


def build_method_tab(results_path: Path = STUDY_RESULTS) -> None:
    gr.Markdown(METHOD_MD, latex_delimiters=LATEX, elem_classes=["mrtpo-method"])
    results = study_results(results_path)
    try:
        text, figure = study_markdown(results), (study_figure(results) if results is not None else None)
    except (KeyError, TypeError, ValueError, IndexError) as e:  # a damaged file must not stop the app
        text, figure = f"**{Path(results_path).name} could not be shown** ({type(e).__name__}: {e}).", None
    gr.Markdown(STUDY_MD + "\n\n" + text, elem_classes=["mrtpo-method"])
    if figure is not None:
        gr.Plot(figure, label="Final mean reward minus GDPO's", elem_id="study-plot")
