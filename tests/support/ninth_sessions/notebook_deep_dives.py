"""The notebook session's later analyses: elasticity, returns, export and per-region deep dives."""

from __future__ import annotations

from typing import Any

from tests.support.ninth_sessions.common import Conv
from tests.support.ninth_sessions.notebook_output import (
    CHANNELS,
    MONTHS,
    N_ORDERS,
    PD,
    REGIONS,
    run,
    table,
    traceback,
)


def returns_and_deep_dives(c: Conv, best: str, growth: dict[str, float]) -> None:
    rng = c.rng
    c.user(
        "Returns: return rate by channel and by region, and flag any combination with "
        "return rate above 12%. "
        "Always weight by orders, not revenue."
    )

    rows: list[list[Any]] = []

    flag = []

    for ch in CHANNELS:
        for rg in REGIONS:
            rate = rng.uniform(3, 16)
            rows.append([ch, rg, rng.randint(3000, 90000), f"{rate:.2f}"])
            if rate > 12:
                flag.append((ch, rg, rate))

    run(
        c,
        (
            "rr = orders.groupby(['channel','region'], "
            "observed=True).agg(orders=('order_id','size'), "
            "return_rate=('returned','mean'))\nrr['return_rate'] = "
            "(rr.return_rate*100).round(2)\nrr.reset_index()"
        ),
        table(["channel", "region", "orders", "return_rate"], rows),
    )

    c.say(
        f"{len(flag)} channel/region combinations exceed 12% (order-weighted):\n\n"
        + "\n".join(f"- `{a}` × `{b}`: {r:.2f}%" for a, b, r in flag)
        + "\n\nThe overall order-weighted return rate is 8.37%."
    )

    c.user(
        "Export: write the monthly pivot, the cohort table and the return table to "
        "reports/fy2025/q4_summary.xlsx, one sheet each. "
        "Make sure the sheet names are at most 31 characters."
    )

    run(
        c,
        (
            "with pd.ExcelWriter('reports/fy2025/q4_summary.xlsx', engine='openpyxl') as xw:\n "
            "   pv.to_excel(xw, sheet_name='monthly_net_revenue_by_region_2025')\n    "
            "ret_pct.to_excel(xw, sheet_name='cohorts')\n    rr.to_excel(xw, "
            "sheet_name='returns')"
        ),
        traceback(
            rng,
            24,
            [
                (
                    (
                        "/opt/conda/envs/analytics/lib/python3.11/site-packages/openpyxl/"
                        "workbook/child.py"
                    ),
                    93,
                    "title",
                    "raise ValueError(msg)",
                )
            ],
            "ValueError: Sheet title 'monthly_net_revenue_by_region_2025' exceeds 31 characters",
        ),
        err=True,
    )

    run(
        c,
        (
            "import os\nos.makedirs('reports/fy2025', exist_ok=True)\nwith "
            "pd.ExcelWriter('reports/fy2025/q4_summary.xlsx', engine='openpyxl') as xw:\n    "
            "pv.to_excel(xw, sheet_name='net_rev_by_region')\n    ret_pct.to_excel(xw, "
            "sheet_name='cohorts')\n    rr.to_excel(xw, "
            "sheet_name='returns')\nos.path.getsize('reports/fy2025/q4_summary.xlsx')"
        ),
        "48213",
        "The first sheet name was 35 characters; renaming to `net_rev_by_region`.",
    )

    c.say(
        "Written `reports/fy2025/q4_summary.xlsx` (48,213 bytes) with sheets "
        "`net_rev_by_region`, `cohorts`, `returns`."
    )

    for k, rg in enumerate(REGIONS):
        c.user(
            f"Deep dive on {rg}: top 15 customers by net revenue in 2025, their segment "
            "and order count, and the "
            f"share of {rg} revenue they represent. {'Exclude B2B accounts.' if k % 3 == 1 else ''}"
        )
        rows = [
            [
                f"C{rng.randint(100000, 999999)}",
                rng.choice(["consumer", "prosumer", "smb", "enterprise"]),
                rng.randint(12, 340),
                f"{rng.uniform(4000, 90000):,.2f}",
                f"{rng.uniform(0.1, 2.5):.2f}",
            ]
            for _ in range(40)
        ]
        q = '.query("~is_b2b")' if k % 3 == 1 else ""
        run(
            c,
            "top = (orders[orders.region == "
            f"'{rg}'].merge(customers[['customer_id','segment','is_b2b']], "
            "on='customer_id')"
            f"{q}\n       "
            ".groupby(['customer_id','segment']).agg(orders=('order_id','size'), "
            "net=('net_revenue_eur','sum')))\n"
            f"top['share_pct'] = top.net / orders.loc[orders.region == '{rg}', "
            "'net_revenue_eur'].sum() * 100\ntop.nlargest(15, 'net')",
            table(["customer_id", "segment", "orders", "net", "share_pct"], rows),
        )
        if k % 4 == 2:
            run(
                c,
                (
                    f"customers.loc[customers.customer_id == '{rows[0][0]}', "
                    "['churned_at']].astype('datetime64[ns]')"
                ),
                traceback(
                    rng,
                    30 + k,
                    [
                        (
                            f"{PD}/core/arrays/datetimes.py",
                            2401,
                            "objects_to_datetime64",
                            "raise err",
                        )
                    ],
                    (
                        "DateParseError: Unknown datetime string format, unable to parse: "
                        "31/09/2025, at position 0"
                    ),
                ),
                err=True,
            )
            c.say(
                f"`churned_at` for `{rows[0][0]}` holds an invalid date (31/09/2025), so "
                "it can't be parsed; the column is free text in the CRM export."
            )
        wk: list[list[Any]] = [
            [
                f"2025-W{w:02d}",
                f"{rng.uniform(20000, 140000):,.2f}",
                rng.randint(400, 3800),
                f"{rng.uniform(25, 60):.2f}",
                f"{rng.uniform(2, 15):.2f}",
            ]
            for w in range(1, 53)
        ]
        run(
            c,
            (
                "w = orders[orders.region == "
                f"'{rg}'].set_index('order_ts').resample('W')\npd.DataFrame({{'net': "
                "w.net_revenue_eur.sum(), 'orders': w.order_id.size(), 'aov': "
                f"w.net_revenue_eur.mean(), 'ret_pct': w.returned.mean()*100}})"
            ),
            table(["week", "net", "orders", "aov", "ret_pct"], wk),
        )
        peak = max(wk, key=lambda r: float(r[1].replace(",", "")))
        total_share = sum(float(r[4]) for r in rows)
        c.say(
            f"In {rg}, the top 15 customers account for {total_share:.2f}% of net revenue. "
            f"The largest is `{rows[0][0]}` "
            f"({rows[0][1]}, {rows[0][2]} orders, EUR {rows[0][3]}). Peak week was "
            f"{peak[0]} with EUR {peak[1]} net on {peak[2]} orders. "
            + ("B2B accounts were excluded via `is_b2b`." if k % 3 == 1 else "")
        )

    c.user(
        "Final: write me a short summary of everything we found, with the key numbers, so "
        "I can paste it into the QBR deck."
    )

    c.say(
        "QBR summary (FY2025, net revenue incl. VAT, `net_revenue_eur` only):\n\n"
        f"- Net revenue EUR 48,913,207.55 on {N_ORDERS:,} orders (mean 40.61 EUR).\n"
        f"- Fastest-growing region H2 vs H1: {best} (+{growth[best]:.2f}%).\n"
        "- Shipping: 1,222 implausible values (>45 days) set to NaN, not imputed; "
        "marketplace p95 is the outlier.\n"
        "- Price elasticity on app channels ≈ −0.44.\n"
        f"- {len(flag)} channel/region combinations above the 12% return threshold.\n"
        "- Export in `reports/fy2025/q4_summary.xlsx`."
    )


def dictionary_and_elasticity(c: Conv) -> None:
    rng = c.rng
    c.user(
        "Read the data dictionary at docs/data_dictionary.md and check whether "
        "`discount_eur` includes VAT."
    )

    dd = [
        "# Data dictionary — orders mart (v3.2.0)",
        "",
        "| column | type | description |",
        "|---|---|---|",
    ]

    for col, desc in [
        ("order_id", "Primary key, 'O' + 8 digits"),
        ("customer_id", "FK to customers, 'C' + 6 digits"),
        ("order_ts", "Order placement time, UTC"),
        ("region", "Sales region; null before CRM sync of 2025-03-01"),
        ("gross_revenue_eur", "Basket value incl. VAT, before discounts"),
        ("discount_eur", "Voucher + promo discount, incl. VAT"),
        ("net_revenue_eur", "gross_revenue_eur - discount_eur, incl. VAT; excludes shipping fees"),
        ("items", "Number of line items"),
        ("shipping_days", "Days from dispatch to delivery scan; carrier-reported"),
        ("returned", "True if any line item was returned within 30 days"),
    ]:
        dd.append(f"| `{col}` | | {desc} |")

    dd += [
        "",
        "## Known issues",
        "",
        (
            "- DATA-2291: 312 orders between 2025-01-02 and 2025-02-13 have null discount "
            "(engine migration)."
        ),
        (
            "- DATA-2307: marketplace shipping_days are reported by partners and can be off "
            "by the partner's batch delay (up to 60 days)."
        ),
        (
            "- VAT rates differ per country: DE 19%, NL 21%, SE 25%, ES 21%, FR 20%, IT 22%, "
            "IE 23%, PL 23%."
        ),
        "",
        "Contact: analytics-eng@northwind-retail.eu · refreshed nightly at 03:15 CET",
    ]

    dd += [
        (
            f"Revision {k}: {rng.choice(['added', 'clarified', 'deprecated'])} column notes "
            f"({rng.choice(MONTHS)})"
        )
        for k in range(40)
    ]

    c.call("read_file", {"path": "docs/data_dictionary.md"}, "\n".join(dd))

    c.say(
        "Yes — per `docs/data_dictionary.md` (v3.2.0), `discount_eur` is voucher + promo "
        "discount **including VAT**, and "
        "`net_revenue_eur` = `gross_revenue_eur` − `discount_eur`, also incl. VAT and "
        "excluding shipping fees. "
        "The 312 null discounts are known issue DATA-2291; the marketplace shipping "
        "delays are DATA-2307, which fits the "
        "cap at 45 days you chose. Questions go to analytics-eng@northwind-retail.eu."
    )

    c.user(
        "Let's estimate price elasticity for the app channels: log(items) on log(avg unit "
        "price) with month fixed effects, "
        "robust SEs. Use only orders with items between 1 and 20."
    )

    reg = (
        f"""                            OLS Regression Results
==============================================================================
Dep. Variable:              log_items   R-squared:                       0.{rng.randint(100, 400)}
Model:                            OLS   Adj. R-squared:                  0.{rng.randint(100, 400)}
Method:                 Least Squares   F-statistic:                     \
{rng.uniform(900, 3000):.1f}
No. Observations:              {rng.randint(300000, 500000)}   AIC:                         \
{rng.uniform(6e5, 9e5):.4e}
Covariance Type:                  HC3
==============================================================================
                 coef    std err          z      P>|z|      [0.025      0.975]
------------------------------------------------------------------------------
Intercept      1.{rng.randint(1000, 9999)}      0.004    {rng.uniform(200, 400):.3f}      0.000   \
    1.2        1.4
log_price     -0.{rng.randint(3000, 5000)}      0.002   {rng.uniform(-250, -150):.3f}      0.000  \
    -0.46       -0.42
"""
        + "\n".join(
            (
                f"C(month)[T.{m}]  {rng.uniform(-0.1, 0.1):7.4f}      0.00{rng.randint(3, 9)}  "
                f"{rng.uniform(-9, 9):8.3f}      0.{rng.randint(0, 999):03d}"
            )
            for m in MONTHS[1:]
        )
        + """
==============================================================================
Omnibus:                    41233.101   Durbin-Watson:                   1.998
Prob(Omnibus):                  0.000   Jarque-Bera (JB):            61022.337
Notes:
[1] Standard Errors are heteroscedasticity robust (HC3)"""
    )

    run(
        c,
        (
            "import statsmodels.formula.api as smf\napp = "
            "orders[orders.channel.isin(['app_ios','app_android']) & "
            "orders['items'].between(1, 20)].copy()\napp['log_items'] = "
            "np.log(app['items'])\napp['log_price'] = np.log(app.net_revenue_eur / "
            "app['items'])\nres = smf.ols('log_items ~ log_price + C(month)', "
            "data=app).fit(cov_type='HC3')\nprint(res.summary())"
        ),
        traceback(
            rng,
            21,
            [
                (
                    f"{PD}/core/arraylike.py",
                    396,
                    "array_ufunc",
                    "result = getattr(ufunc, method)(*inputs, **kwargs)",
                ),
                (
                    "/opt/conda/envs/analytics/lib/python3.11/site-packages/patsy/highlevel.py",
                    309,
                    "dmatrices",
                    'raise PatsyError("model is missing required outcome variables")',
                ),
            ],
            "PatsyError: Error evaluating factor: ValueError: array must not contain infs or NaNs",
        )
        + "\nRuntimeWarning: divide by zero encountered in log",
        err=True,
    )

    run(
        c,
        (
            "app = app[app.net_revenue_eur > 0]\napp['log_price'] = "
            "np.log(app.net_revenue_eur / app['items'])\nres = smf.ols('log_items ~ log_price "
            "+ C(month)', data=app).fit(cov_type='HC3')\nprint(res.summary())"
        ),
        reg,
        (
            "Some orders have `net_revenue_eur` of 0 (100% vouchers), which gives log(0). "
            "Filtering them out."
        ),
    )

    c.say(
        "The elasticity on the app channels is about −0.44 (HC3 robust SE 0.002, 95% CI "
        "−0.46 to −0.42): a 10% higher "
        "average unit price goes with ~4.4% fewer items per order. 2,871 zero-revenue "
        "orders (full-voucher) were excluded "
        "because log(0) is undefined. Month fixed effects are small (|coef| < 0.1)."
    )
