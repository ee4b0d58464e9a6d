"""Kernel output for the notebook session: pandas tables, frame info and tracebacks."""

from __future__ import annotations

import random
from typing import Any

from tests.support.ninth_sessions.common import Conv

REGIONS = ["DACH", "Benelux", "Nordics", "Iberia", "France", "Italy", "UK&I", "CEE"]

CHANNELS = ["web", "app_ios", "app_android", "marketplace", "phone"]

MONTHS = [f"2025-{m:02d}" for m in range(1, 13)]

PD = "/opt/conda/envs/analytics/lib/python3.11/site-packages/pandas"

N_ORDERS = 1_204_331


def money(rng: random.Random, lo: float, hi: float) -> str:
    return f"{rng.uniform(lo, hi):,.2f}"


def table(cols: list[str], rows: list[list[Any]], index: bool = True) -> str:
    widths = [max(len(str(x)) for x in [h] + [r[i] for r in rows]) for i, h in enumerate(cols)]
    out = ["     " + "  ".join(str(h).rjust(w) for h, w in zip(cols, widths, strict=False))]
    for k, r in enumerate(rows):
        out.append(f"{k:<5}" + "  ".join(str(x).rjust(w) for x, w in zip(r, widths, strict=False)))
    return "\n".join(out)


def orders_head(rng: random.Random, n: int) -> str:
    rows: list[list[Any]] = []
    for _ in range(n):
        g = rng.uniform(9, 480)
        d = g * rng.choice([0, 0, 0.05, 0.1, 0.15])
        rows.append(
            [
                f"O{rng.randint(10**7, 10**8 - 1)}",
                f"C{rng.randint(100000, 999999)}",
                (
                    f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                    f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
                ),
                rng.choice([*REGIONS, "NaN"]),
                rng.choice(CHANNELS),
                f"{g:.2f}",
                f"{d:.2f}",
                f"{g - d:.2f}",
                rng.randint(1, 9),
                rng.choice([1, 2, 2, 3, 3, 4, 5, 7, 12, 61]),
                rng.choice(["False"] * 6 + ["True"]),
            ]
        )
    return table(
        [
            "order_id",
            "customer_id",
            "order_ts",
            "region",
            "channel",
            "gross_revenue_eur",
            "discount_eur",
            "net_revenue_eur",
            "items",
            "shipping_days",
            "returned",
        ],
        rows,
    )


def info(rng: random.Random, name: str, n: int, cols: list[tuple[str, str, int]]) -> str:
    lines = [
        "<class 'pandas.core.frame.DataFrame'>",
        f"RangeIndex: {n} entries, 0 to {n - 1}",
        f"Data columns (total {len(cols)} columns):",
        " #   Column             Non-Null Count    Dtype",
        "---  ------             --------------    -----",
    ]
    for i, (col, dt, nulls) in enumerate(cols):
        lines.append(f" {i:<3} {col:<18} {n - nulls:>9} non-null  {dt}")
    lines.append(f"dtypes: {', '.join(sorted({d for _, d, _ in cols}))}")
    lines.append(f"memory usage: {rng.uniform(80, 240):.1f} MB")
    return "\n".join(lines)


def traceback(
    rng: random.Random, cell: int, frames: list[tuple[str, int, str, str]], error: str
) -> str:
    out = [
        "---------------------------------------------------------------------------",
        f"{error.split(':', maxsplit=1)[0]:<40}Traceback (most recent call last)",
        f"Cell In[{cell}], line {rng.randint(2, 9)}",
    ]
    for f in frames:
        out.append(f"File {f[0]}:{f[1]}, in {f[2]}")
        out.append(f"   {f[1] - 1} ...")
        out.append(f"-> {f[1]} {f[3]}")
    out.append("")
    out.append(error)
    return "\n".join(out)


def run(c: Conv, code: str, out: str, text: str | None = None, err: bool = False) -> str:
    return c.call("run_cell", {"code": code}, (out, True) if err else out, text)
