"""Sources, pages and search results for the research session."""

from __future__ import annotations

import json
import random

SOURCES = [
    (
        "IEA",
        "https://www.iea.org/reports/global-ev-outlook-2025",
        "Global EV Outlook 2025",
        "primary",
    ),
    (
        "IEA",
        (
            "https://www.iea.org/data-and-statistics/data-tools/global-ev-data-explorer?"
            "tab=sales&region=World&year=2024"
        ),
        "Global EV Data Explorer",
        "primary",
    ),
    (
        "BNEF",
        "https://about.bnef.com/insights/clean-transport/electric-vehicle-outlook/",
        "Electric Vehicle Outlook",
        "primary",
    ),
    (
        "ACEA",
        (
            "https://www.acea.auto/pc-registrations/"
            "new-car-registrations-0-8-in-2024-battery-electric-13-6-market-share/"
        ),
        "New car registrations 2024",
        "primary",
    ),
    (
        "Eurostat",
        (
            "https://ec.europa.eu/eurostat/databrowser/view/road_eqs_carpda/default/table?"
            "lang=en&category=road.road_eqs"
        ),
        "Passenger cars by type of motor energy",
        "primary",
    ),
    (
        "CPCA",
        "http://www.cpcaauto.com/newslist.php?types=csjd&id=3642",
        "China passenger car association monthly",
        "primary",
    ),
    (
        "US DOE AFDC",
        "https://afdc.energy.gov/data/10962",
        "U.S. plug-in vehicle sales by model",
        "primary",
    ),
    (
        "Reuters",
        (
            "https://www.reuters.com/business/autos-transportation/"
            "global-ev-sales-rose-25-2024-rho-motion-2025-01-14/"
        ),
        "Global EV sales rose 25% in 2024",
        "secondary",
    ),
    (
        "Electrek",
        "https://electrek.co/2025/01/15/ev-sales-2024-record/?utm_source=rss&utm_medium=feed",
        "EV sales hit record in 2024",
        "secondary",
    ),
    (
        "Bloomberg",
        (
            "https://www.bloomberg.com/news/articles/2025-02-03/china-ev-exports-hit-record?"
            "srnd=green&sref=Xy12AbCd"
        ),
        "China EV exports hit record",
        "secondary",
    ),
    (
        "Wikipedia",
        "https://en.wikipedia.org/wiki/Electric_car_use_by_country#Europe",
        "Electric car use by country",
        "tertiary",
    ),
    (
        "ICCT",
        "https://theicct.org/publication/ev-battery-cost-2024-jan25/",
        "Battery cost trends",
        "primary",
    ),
    (
        "Norwegian OFV",
        "https://ofv.no/bilsalget/bilsalget-i-desember-2024",
        "Bilsalget i desember 2024",
        "primary",
    ),
    (
        "KBA",
        (
            "https://www.kba.de/DE/Statistik/Fahrzeuge/Neuzulassungen/neuzulassungen_node.html?"
            "nn=3514348"
        ),
        "Neuzulassungen",
        "primary",
    ),
    (
        "Our World in Data",
        (
            "https://ourworldindata.org/grapher/electric-car-sales-share?tab=chart&"
            "country=CHN~USA~European+Union+%2827%29"
        ),
        "Share of new cars that are electric",
        "tertiary",
    ),
]

SENT = [
    (
        "Electric car sales exceeded {a} million in {y}, accounting for around {p}% of cars "
        "sold globally."
    ),
    (
        "In {y}, battery electric cars made up {p}% of new registrations in the EU, down from "
        "{q}% a year earlier."
    ),
    "China accounted for almost {p}% of global electric car sales in {y}.",
    (
        "Average lithium-ion battery pack prices fell to ${a}/kWh in {y}, a {p}% drop from "
        "the previous year."
    ),
    "Norway's share of fully electric cars in new sales reached {p}% in {y}.",
    "Plug-in hybrids grew faster than battery electric vehicles in {y}, rising {p}% year on year.",
    "The United States recorded {a} million electric car sales in {y}, about {p}% of the market.",
    "Exports of electric cars from China rose to {a} million units in {y}.",
]


Source = tuple[str, str, str, str]


def sentence(rng: random.Random) -> str:
    return rng.choice(SENT).format(
        a=rng.choice(["1.3", "1.6", "3.2", "17.3", "14", "115", "139"]),
        y=rng.choice([2022, 2023, 2024, 2025]),
        p=rng.choice(["13.6", "14.6", "20", "22", "60", "88.9", "92.1", "10", "25"]),
        q=rng.choice(["14.6", "12.1"]),
    )


def page(rng: random.Random, src: Source) -> str:
    org, url, title, _ = src
    paras = [f"{title} — {org}", url, ""]
    for _k in range(rng.randint(16, 30)):
        paras.append(
            " ".join(sentence(rng) for _ in range(rng.randint(2, 5)))
            + " "
            + rng.choice(
                [
                    "Methodology notes apply; figures are rounded.",
                    "Data for the final quarter are preliminary.",
                    "Sales include passenger cars only; two- and three-wheelers are excluded.",
                    "See the annex for country-level tables.",
                    "Source: national registration data and industry associations.",
                ]
            )
        )
    paras.append(
        f"Table 1.{rng.randint(1, 9)}: "
        + "; ".join(
            f"{c_}: {rng.randint(1, 99)}.{rng.randint(0, 9)}%"
            for c_ in [
                "China",
                "Europe",
                "United States",
                "Rest of world",
                "Norway",
                "Germany",
                "France",
                "UK",
            ]
        )
    )
    return "\n\n".join(paras)


def results(rng: random.Random, query: str) -> tuple[str, list[Source]]:
    picks = rng.sample(SOURCES, 6)
    return json.dumps(
        {
            "query": query,
            "results": [
                {"title": t, "url": u, "source": o, "snippet": sentence(rng)}
                for o, u, t, _ in picks
            ],
        },
        indent=1,
    ), picks
