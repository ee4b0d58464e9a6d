"""A research agent searching and fetching the web (s7_research_browsing)."""

from __future__ import annotations

from pathlib import Path

from tests.support.ninth_sessions.common import Conv, schema
from tests.support.ninth_sessions.research_sources import (
    SOURCES,
    page,
    results,
    sentence,
)


def research_browsing(out_dir: Path) -> list[Path]:
    c = Conv(
        707,
        (
            "You are a research assistant with web access. Search, read sources, and write "
            "sourced reports. Quote exactly; give the URL for every quote."
        ),
        [
            schema(
                "web_search", "Search the web; returns titles, URLs and snippets.", query="string"
            ),
            schema("fetch", "Fetch a URL and return its main text.", url="string"),
        ],
    )

    rng = c.rng

    c.user(
        "I'm writing a briefing on the global EV market in 2024. Find the key figures: "
        "global sales and share, China/EU/US split, battery prices, "
        "and Norway as the outlier. Cite only primary sources (agencies, statistics "
        "offices, industry associations) — news sites and Wikipedia "
        "can lead you to sources but must never be cited. Give numbers with their year and unit."
    )

    topics = [
        "global electric car sales 2024 share IEA",
        "EU battery electric market share 2024 ACEA",
        "China NEV sales 2024 CPCA",
        "US plug-in sales 2024 Argonne AFDC",
        "lithium-ion battery pack price 2024 $/kWh",
        "Norway new car sales electric share December 2024 OFV",
        "Germany BEV registrations 2024 KBA",
        "plug-in hybrid growth 2024 China",
        "China EV exports 2024 million units",
        "EV sales forecast 2025 BNEF",
        "Eurostat passenger cars motor energy 2024",
        "ICCT battery costs 2024",
    ]

    found = []

    for k, t in enumerate(topics):
        res, picks = results(rng, t)
        prim = [p for p in picks if p[3] == "primary"][:2] or [
            rng.choice([s for s in SOURCES if s[3] == "primary"])
        ]
        c.call("web_search", {"query": t}, res, text=(f"Searching: {t}." if k % 3 == 0 else None))
        c.calls([("fetch", {"url": p[1]}, page(rng, p)) for p in prim])
        sec = [p for p in picks if p[3] != "primary"]
        if sec and k % 3 == 1:
            c.call("fetch", {"url": sec[0][1]}, page(rng, sec[0]))
        q = sentence(rng)
        found.append((prim[0], q))
        c.say(
            f'From {prim[0][0]} ({prim[0][2]}, {prim[0][1]}): "{q}"'
            + (
                (
                    f" I also read {sec[0][0]} ({sec[0][1]}) but it's {sec[0][3]}, so I'll "
                    "only use it to locate the underlying data."
                )
                if sec and k % 3 == 1
                else ""
            )
        )
        if k == 4:
            c.user(
                "Careful: the battery price figure must be from BNEF's own survey or the "
                "ICCT, not a news write-up. Also convert nothing — keep USD."
            )
            c.say(
                "Understood: battery prices only from BNEF's survey or ICCT, in USD per "
                "kWh as published."
            )
        if k == 8:
            c.user(
                "Add one more constraint: the report must be under 600 words, and every "
                "number needs the year right next to it."
            )
            c.say("Noted: under 600 words, year next to each number.")

    c.user(
        "Double-check the Norway figure against the OFV December release directly and the "
        "EU figure against ACEA's press release. If they differ from what you have, use "
        "the primary release."
    )

    for s in (SOURCES[12], SOURCES[3]):
        c.call("fetch", {"url": s[1]}, page(rng, s))

    c.say(
        "Confirmed from the releases: OFV "
        "(https://ofv.no/bilsalget/bilsalget-i-desember-2024) gives Norway's BEV share of "
        "new cars in 2024 as 88.9%; "
        "ACEA (https://www.acea.auto/pc-registrations/"
        "new-car-registrations-0-8-in-2024-battery-electric-13-6-market-share/) "
        "gives the EU BEV share for 2024 as 13.6%, down from 14.6% in 2023."
    )

    c.user("Write the final report now.")

    c.say(
        "# Global EV market, 2024 — briefing\n\n"
        + "\n".join(f"- {q} — {s[0]}, {s[2]} ({s[1]})" for s, q in found)
        + "\n\nAll figures from primary sources; news and Wikipedia used only to locate them."
    )

    return c.write_abridged(out_dir, "s7_research_browsing")
