"""Notebook session: a data-science agent in a Jupyter kernel with signed thinking before each
step (notebook-808)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    IdGen,
    out_path,
    png,
    prose,
    signature,
    text,
    thinking,
    tool_result,
    tool_use,
    write_abridged,
)

COLS = [
    "tenure_months",
    "monthly_charges",
    "total_charges",
    "contract_type",
    "payment_method",
    "num_support_calls",
    "last_login_days",
    "plan_tier",
    "region",
    "has_addon_security",
    "avg_session_min",
    "churned",
]
SYSTEM = "You are a data scientist working in a Jupyter kernel. Think before each step."
TOOLS: list[dict[str, Any]] = [
    {
        "name": "execute_cell",
        "description": "Execute Python code in the kernel.",
        "input_schema": {
            "type": "object",
            "properties": {"code": {"type": "string"}},
            "required": ["code"],
        },
    },
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
]
FIRST_PROMPT = (
    "Data is in /data/churn/customers_2025q3.parquet. Build a churn model. Constraints: only use "
    "features available "
    "at month start (no `total_charges` leakage), always stratify splits on `churned`, and make "
    "sure every plot is saved under "
    "/data/churn/figures/. Report AUC and recall at 10% contact rate."
)
ASKS = [
    "Try gradient boosting with class weights.",
    "Why is recall so low for region EMEA?",
    "Plot calibration.",
    "Add the interaction between tenure and contract type.",
    "Check for leakage again.",
    "Show feature importances.",
    "Drop customers with tenure under 2 months and rerun.",
]
FINAL_ANSWER = (
    "You asked: only month-start features (no `total_charges`), stratified splits on "
    "`churned`, plots under /data/churn/figures/, and AUC plus recall at 10% contact rate. "
    "All respected."
)


def _df_print(rnd: random.Random, rows: int) -> str:
    head = "      " + "  ".join(f"{c:>16}" for c in COLS[:8])
    lines = [head]
    for i in range(rows):
        lines.append(f"{i:<6}" + "  ".join(f"{rnd.uniform(0, 500):16.3f}" for _ in COLS[:8]))
    lines.append(f"\n[{rnd.randint(5000, 90000)} rows x {len(COLS)} columns]")
    return "\n".join(lines)


def _cell(rnd: random.Random, step: int, k: int, c1: str, c2: str) -> str:
    return "\n".join(
        [
            "import pandas as pd, numpy as np",
            "from sklearn.model_selection import StratifiedKFold",
            "df = pd.read_parquet('/data/churn/customers_2025q3.parquet')",
            f"df['{c1}_x_{c2}'] = df['{c1}'].astype('category').cat.codes * "
            f"df['{c2}'].astype('category').cat.codes",
            f"model = HistGradientBoostingClassifier(max_iter={rnd.choice([200, 400, 800])}, "
            f"learning_rate={rnd.choice([0.03, 0.05, 0.1])})",
            "scores = cross_val_score(model, X, y, "
            f"cv=StratifiedKFold({rnd.choice([5, 10])}), scoring='roc_auc')",
            f"fig.savefig('/data/churn/figures/step_{step:02d}_{k}.png', dpi=120)",
            "print(df.describe().T.head(12)); scores.mean()",
        ]
    )


def _cell_result(
    rnd: random.Random, tid: str, step: int, k: int, c1: str, c2: str, plots: list[str]
) -> dict[str, Any]:
    r = rnd.random()
    if r < 0.25:
        traceback = (
            "Traceback (most recent call last):\n"
            f'  File "<ipython-input-{rnd.randint(10, 99)}>", line {rnd.randint(2, 9)}, '
            f"in <module>\n    df['{c1}_x_{c2}'] = ...\nKeyError: '{rnd.choice(COLS)}'\n"
        )
        return tool_result(tid, traceback, is_error=True)
    if r < 0.55:
        scores = (
            f"AUC mean {rnd.uniform(0.7, 0.9):.3f} (std {rnd.uniform(0.005, 0.03):.3f})\n"
            f"Saved /data/churn/figures/step_{step:02d}_{k}.png"
        )
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": rnd.choice(plots)},
        }
        return tool_result(tid, [{"type": "text", "text": scores}, image])
    printed = _df_print(rnd, rnd.randint(12, 40))
    return tool_result(
        tid, printed + f"\n\nOut[{rnd.randint(10, 99)}]: {rnd.uniform(0.7, 0.9):.4f}"
    )


def notebook(out_dir: Path) -> list[Path]:
    """notebook-808 (abridged JSONL, thinking on): a data-science agent in a Jupyter kernel
    analysing churn, with extended thinking signed before each step.

    Every reply opens with signed thinking (150-700 words) that names columns and variables
    in backticks; it runs cells (`execute_cell` with multi-line code), gets DataFrame prints,
    tracebacks as `is_error` results, and plots as PNG images inside the tool result (text +
    image). Its answers report metrics with their names (`AUC 0.83`, `recall 0.71`,
    `n_estimators 400`) and the analyst's instructions come once in the first prompt.
    """
    rnd = random.Random(808)
    ids = IdGen(rnd)
    plots = [png(1000, 600, 230), png(800, 800, 200), png(1200, 500, 250)]
    msgs: list[dict[str, Any]] = [{"role": "user", "content": FIRST_PROMPT}]

    for step in range(26):
        if step:
            msgs.append({"role": "user", "content": rnd.choice(ASKS)})
        for k in range(rnd.randint(1, 3)):
            c1, c2 = rnd.sample(COLS[:-1], 2)
            th = (
                f"The last result suggests `{c1}` interacts with `{c2}`. I need to keep "
                "`total_charges` out. "
                f"Use `StratifiedKFold(n_splits={rnd.choice([5, 10])})` and "
                f"`random_state={rnd.randint(1, 99)}`. " + prose(rnd, ENGLISH, rnd.randint(8, 40))
            )
            tid = ids()
            code = _cell(rnd, step, k, c1, c2)
            msgs.append(
                {
                    "role": "assistant",
                    "content": [
                        thinking(th, signature(rnd)),
                        text(rnd.choice(["Running the next cell.", f"Checking `{c1}`."])),
                        tool_use(tid, "execute_cell", code=code),
                    ],
                }
            )
            out = _cell_result(rnd, tid, step, k, c1, c2, plots)
            msgs.append({"role": "user", "content": [out]})
        th = f"Summarise: `{rnd.choice(COLS)}` dominates. " + prose(
            rnd, ENGLISH, rnd.randint(3, 10)
        )
        sig = signature(rnd)
        summary = (
            f"Current best: AUC {rnd.uniform(0.78, 0.88):.3f}, recall {rnd.uniform(0.5, 0.8):.2f} "
            f"at 10% contact rate, with n_estimators {rnd.choice([200, 400, 800])} "
            f"and max_depth {rnd.choice([4, 6, 8])}. Top features: `{rnd.choice(COLS[:-1])}`, "
            f"`{rnd.choice(COLS[:-1])}`. Holdout has {rnd.randint(4000, 9000)} rows, "
            f"churn rate {rnd.uniform(0.08, 0.2):.3f}. Figure saved as "
            f"/data/churn/figures/step_{step:02d}_summary.png. " + prose(rnd, ENGLISH, 2)
        )
        msgs.append({"role": "assistant", "content": [thinking(th, sig), text(summary)]})

    msgs.append(
        {
            "role": "user",
            "content": "Write the final summary for the churn review. Which constraints did I "
            "give you, and did we respect them?",
        }
    )
    recall = "Recall the constraints from the first message. `total_charges` excluded."
    msgs.append(
        {
            "role": "assistant",
            "content": [thinking(recall, signature(rnd)), text(FINAL_ANSWER)],
        }
    )
    return write_abridged(
        out_path(out_dir, "notebook-808.jsonl"),
        msgs,
        system=SYSTEM,
        tools=TOOLS,
        model="claude-opus-4-1",
    )
