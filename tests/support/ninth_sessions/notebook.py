"""Data analysis in a Jupyter notebook with pandas (s1_notebook_pandas, abridged JSONL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.ninth_sessions.common import Conv, schema
from tests.support.ninth_sessions.notebook_deep_dives import (
    dictionary_and_elasticity,
    returns_and_deep_dives,
)
from tests.support.ninth_sessions.notebook_output import (
    CHANNELS,
    MONTHS,
    N_ORDERS,
    PD,
    REGIONS,
    info,
    money,
    orders_head,
    run,
    table,
    traceback,
)


def notebook_pandas(out_dir: Path) -> list[Path]:
    c = Conv(
        101,
        (
            "You are a data analysis assistant working inside a Jupyter kernel (Python "
            "3.11, pandas 2.2.1, "
            "numpy 1.26.4, statsmodels 0.14.1, matplotlib 3.8.3). Run code with run_cell; "
            "inspect frames with "
            "inspect_dataframe; read files with read_file. Report figures with units and "
            "name columns in backticks."
        ),
        [
            schema(
                "run_cell",
                (
                    "Execute Python code in the notebook kernel and return "
                    "stdout/stderr/display output."
                ),
                code="string",
            ),
            schema(
                "inspect_dataframe",
                "Show dtypes, null counts and head of a DataFrame in the kernel.",
                name="string",
                rows="integer",
            ),
            schema("read_file", "Read a text file from the project.", path="string"),
        ],
    )

    rng = c.rng

    c.user(
        "Load `data/raw/orders_2025.parquet` and `data/raw/customers_2025-12-31.csv` and "
        "give me an overview. "
        "Only use net revenue (`net_revenue_eur`) for every revenue figure, never gross. "
        "Don't drop rows with a null "
        "`region`; label them 'unknown' instead. The fiscal year is calendar 2025."
    )

    run(
        c,
        (
            "import pandas as pd, numpy as np\norders = "
            "pd.read_parquet('data/raw/orders_2025.parquet')\ncustomers = "
            "pd.read_csv('data/raw/customers_2025-12-31.csv', "
            "parse_dates=['signup_date'])\nprint(orders.shape, "
            "customers.shape)\norders.head(60)"
        ),
        f"({N_ORDERS}, 11) (318204, 9)\n" + orders_head(rng, 60),
        "Loading both files first.",
    )

    c.call(
        "inspect_dataframe",
        {"name": "orders", "rows": 0},
        info(
            rng,
            "orders",
            N_ORDERS,
            [
                ("order_id", "object", 0),
                ("customer_id", "object", 0),
                ("order_ts", "datetime64[ns, UTC]", 0),
                ("region", "object", 18842),
                ("channel", "category", 0),
                ("gross_revenue_eur", "float64", 0),
                ("discount_eur", "float64", 312),
                ("net_revenue_eur", "float64", 312),
                ("items", "int16", 0),
                ("shipping_days", "float32", 4107),
                ("returned", "bool", 0),
            ],
        ),
    )

    c.call(
        "inspect_dataframe",
        {"name": "customers", "rows": 0},
        info(
            rng,
            "customers",
            318204,
            [
                ("customer_id", "object", 0),
                ("signup_date", "datetime64[ns]", 0),
                ("country", "object", 55),
                ("segment", "object", 0),
                ("acquisition_source", "object", 2210),
                ("is_b2b", "bool", 0),
                ("vat_id", "object", 290113),
                ("lifetime_orders", "int32", 0),
                ("churned_at", "object", 241990),
            ],
        ),
    )

    desc_rows = []

    for col in ["gross_revenue_eur", "discount_eur", "net_revenue_eur", "items", "shipping_days"]:
        desc_rows.append(
            [
                col,
                N_ORDERS,
                money(rng, 20, 120),
                money(rng, 10, 200),
                money(rng, 0, 5),
                money(rng, 10, 40),
                money(rng, 30, 60),
                money(rng, 60, 140),
                money(rng, 400, 9000),
            ]
        )

    run(
        c,
        "orders.describe().T",
        table(["", "count", "mean", "std", "min", "25%", "50%", "75%", "max"], desc_rows),
    )

    c.say(
        f"Overview:\n\n- `orders` has {N_ORDERS:,} rows and 11 columns; `customers` has "
        "318,204 rows.\n"
        "- `region` is null in 18,842 rows (1.56%); I'll map those to `'unknown'` as you "
        "asked rather than drop them.\n"
        "- `net_revenue_eur` is null in 312 rows — all of them also have a null "
        "`discount_eur`; they look like orders "
        "created before the discount engine migration on 2025-02-14.\n"
        "- `shipping_days` has 4,107 nulls and a max of 61, which looks suspicious.\n"
        f"- Total net revenue for 2025 is EUR 48,913,207.55 across {N_ORDERS:,} orders; "
        "the mean order is 40.61 EUR.\n\n"
        "Next I'd suggest a monthly breakdown by `region` and `channel`."
    )

    c.user(
        "Good. Monthly net revenue by region please, as a pivot, and tell me which region "
        "grew fastest H1 vs H2."
    )

    code = (
        "orders['region'] = orders['region'].fillna('unknown')\norders['month'] = "
        "orders['order_ts'].dt.strftime('%Y-%m')\npv = orders.pivot_table(index='month', "
        "columns='region', values='net_revenue', aggfunc='sum')\npv"
    )

    run(
        c,
        code,
        traceback(
            rng,
            7,
            [
                (
                    f"{PD}/core/reshape/pivot.py",
                    102,
                    "pivot_table",
                    "table = __internal_pivot_table(",
                ),
                (f"{PD}/core/reshape/pivot.py", 172, "__internal_pivot_table", "raise KeyError(i)"),
            ],
            "KeyError: 'net_revenue'",
        ),
        err=True,
    )

    rows: list[list[Any]] = [
        [m] + [f"{rng.uniform(200_000, 1_100_000):,.2f}" for _ in [*REGIONS, "unknown"]]
        for m in MONTHS
    ]

    run(
        c,
        code.replace("'net_revenue'", "'net_revenue_eur'"),
        table(["month", *REGIONS, "unknown"], rows),
        "Typo in the column name — it's `net_revenue_eur`.",
    )

    growth = {r: rng.uniform(-8, 31) for r in REGIONS}

    best = max(growth, key=lambda r: growth[r])

    run(
        c,
        (
            "h1 = pv.loc['2025-01':'2025-06'].sum(); h2 = "
            "pv.loc['2025-07':'2025-12'].sum()\n((h2 / h1 - 1) * "
            "100).round(2).sort_values(ascending=False)"
        ),
        "\n".join(f"{r:<10} {g:6.2f}" for r, g in sorted(growth.items(), key=lambda x: -x[1]))
        + "\nunknown      3.88\ndtype: float64",
    )

    c.say(
        f"`{best}` grew fastest: H2 net revenue was {growth[best]:.2f}% above H1. "
        f"`{min(growth, key=lambda r: growth[r])}` shrank by {abs(min(growth.values())):.2f}%. The "
        "`unknown` bucket grew 3.88%, "
        "so the missing regions are not concentrated in one half-year."
    )

    c.user(
        "Shipping days looks off. Treat anything above 45 days as a data error (set it to "
        "NaN), but never "
        "impute it. Then give me median and p95 shipping time per channel."
    )

    run(
        c,
        (
            "orders.loc[orders['shipping_days'] > 45, 'shipping_days'] = "
            "np.nan\n(orders['shipping_days'].isna().sum(), "
            "(orders['shipping_days']>45).sum())"
        ),
        "(5329, 0)",
    )

    rows = [
        [
            ch,
            f"{rng.uniform(1.5, 4):.1f}",
            f"{rng.uniform(6, 14):.1f}",
            rng.randint(20_000, 500_000),
        ]
        for ch in CHANNELS
    ]

    run(
        c,
        (
            "orders.groupby('channel', observed=True)['shipping_days'].agg(median='median', "
            "p95=lambda s: s.quantile(0.95), n='count')"
        ),
        table(["channel", "median", "p95", "n"], rows),
    )

    c.say(
        (
            "1,222 rows had `shipping_days` > 45 and are now NaN (5,329 NaN in total, none "
            "imputed). Per channel:\n\n"
        )
        + "\n".join(f"- `{r[0]}`: median {r[1]} days, p95 {r[2]} days (n = {r[3]:,})" for r in rows)
        + "\n\n`marketplace` has the long tail — p95 is roughly 3x the median."
    )

    c.user(
        "Now cohorts: monthly signup cohort from customers, retention of ordering "
        "customers by months since signup. "
        "Only customers with signup_date in 2025."
    )

    code = (
        "cust25 = customers[customers.signup_date.dt.year == 2025]\nm = "
        "orders.merge(cust25[['customer_id','signup_date']], on='customer_id', "
        "how='inner')\nm['cohort'] = m.signup_date.dt.to_period('M')\nm['age'] = "
        "(m.order_ts.dt.to_period('M') - m.cohort).apply(lambda x: x.n)\nret = "
        "m.groupby(['cohort','age']).customer_id.nunique().unstack()\nret.values.reshape(12, "
        "13)"
    )

    run(
        c,
        code,
        traceback(
            rng,
            12,
            [(f"{PD}/core/arrays/datetimes.py", 1230, "to_period", "raise ValueError(")],
            (
                "ValueError: Converting a tz-aware datetime to a Period drops the timezone; "
                "call tz_convert(None) first"
            ),
        )
        + (
            "\nUserWarning: Converting to PeriodArray/Index representation will drop timezone "
            "information."
        ),
        err=True,
    )

    run(
        c,
        code.replace("m.order_ts.dt.to_period", "m.order_ts.dt.tz_convert(None).dt.to_period"),
        traceback(
            rng,
            13,
            [
                (
                    (
                        "/opt/conda/envs/analytics/lib/python3.11/site-packages/numpy/core/"
                        "fromnumeric.py"
                    ),
                    285,
                    "reshape",
                    "return _wrapfunc(a, 'reshape', newshape, order=order)",
                )
            ],
            "ValueError: cannot reshape array of size 144 into shape (12,13)",
        ),
        err=True,
    )

    rows = []

    for k, m_ in enumerate(MONTHS):
        size = rng.randint(8000, 21000)
        row = (
            [m_, size]
            + [
                f"{100 if a == 0 else max(4, 100 * (0.55 ** (a**0.5)) + rng.uniform(-4, 4)):.1f}"
                for a in range(12 - k)
            ]
            + [""] * k
        )
        rows.append(row)

    run(
        c,
        (
            "ret_pct = ret.div(ret[0], axis=0).mul(100).round(1)\nret_pct.insert(0, 'size', "
            "ret[0])\nret_pct"
        ),
        table(["cohort", "size"] + [str(a) for a in range(12)], rows),
        "The reshape was unnecessary; showing the table directly.",
    )

    c.say(
        f"Cohort retention (2025 signups only, {sum(r[1] for r in rows):,} customers): "
        "month-1 retention ranges "
        f"from {min(float(r[3]) for r in rows[:-1]):.1f}% to "
        f"{max(float(r[3]) for r in rows[:-1]):.1f}%. The `2025-03` cohort "
        "is the weakest after month 3; it coincides with the spring promo that drove "
        "one-off buyers. "
        "Note `order_ts` is tz-aware (UTC) so I converted with `tz_convert(None)` before "
        "building periods."
    )

    dictionary_and_elasticity(c)

    returns_and_deep_dives(c, best, growth)

    return c.write_abridged(out_dir, "s1_notebook_pandas")
