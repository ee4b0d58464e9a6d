"""Browser session: a browser-automation agent comparing flights and hotels (browser-805)."""

from __future__ import annotations

import random
import urllib.parse
from pathlib import Path
from typing import Any

from tests.support.fourteen_sessions.common import (
    ENGLISH,
    IdGen,
    out_path,
    png,
    prose,
    text,
    tool_result,
    tool_use,
    write_abridged,
)

SITES = [
    "https://www.skyscanner-example.com/transport/flights/{o}/{d}/{dd}/",
    "https://www.booking-example.com/searchresults.en-gb.html",
    "https://www.kayak-example.com/flights/{o}-{d}/{dd}",
    "https://travel.example-airline.com/booking/availability",
]
CITIES = [("ber", "lis"), ("muc", "opo"), ("fra", "bcn"), ("ham", "fao"), ("cgn", "mad")]

SYSTEM = "You control a Chromium browser through tools. Be precise and quote the pages you used."
TOOLS: list[dict[str, Any]] = [
    {
        "name": "browser_navigate",
        "description": "Open a URL.",
        "input_schema": {
            "type": "object",
            "properties": {"url": {"type": "string"}},
            "required": ["url"],
        },
    },
    {
        "name": "browser_snapshot",
        "description": "Accessibility snapshot of the page.",
        "input_schema": {"type": "object", "properties": {}},
    },
    {
        "name": "browser_click",
        "description": "Click an element.",
        "input_schema": {
            "type": "object",
            "properties": {"element": {"type": "string"}, "ref": {"type": "string"}},
        },
    },
    {
        "name": "browser_type",
        "description": "Type into an element.",
        "input_schema": {
            "type": "object",
            "properties": {
                "element": {"type": "string"},
                "ref": {"type": "string"},
                "text": {"type": "string"},
                "submit": {"type": "boolean"},
            },
        },
    },
    {
        "name": "browser_take_screenshot",
        "description": "Screenshot of the viewport.",
        "input_schema": {"type": "object", "properties": {"filename": {"type": "string"}}},
    },
]
FIRST_PROMPT = (
    "Find us a family trip to Portugal or Spain, 2 adults and kids aged 7 and 4, in the second "
    "half of November. "
    "Constraints: never book anything non-refundable, only direct flights or one stop under "
    "6 hours total, "
    "and the hotel must be within 1 km of the old town. Budget 1800 EUR all in. Don't enter "
    "payment details, I'll do that."
)
ASKS = [
    "Try another date combination.",
    "What about Porto instead?",
    "Check the hotel options for that one.",
    "Sort by price and look again.",
    "Can you open the second result?",
    "Compare with the airline's own site.",
]
RESULT_NAMES = [
    "TAP Air Portugal",
    "Lufthansa",
    "Iberia",
    "Vueling",
    "Hotel Mar Azul",
    "Casa do Rio Apartments",
    "Ibis Centro",
]


def _long_url(rnd: random.Random) -> str:
    o, d = rnd.choice(CITIES)
    dd = f"2511{rnd.randint(10, 28)}"
    base = rnd.choice(SITES).format(o=o, d=d, dd=dd)
    params = {
        "adultsv2": "2",
        "cabinclass": "economy",
        "childrenv2": "7|4",
        "rtn": "1",
        "preferdirects": "true",
        "outboundaltsenabled": "false",
        "inboundaltsenabled": "false",
        "ref": "home",
        "previousCultureSource": "GEO_LOCATION",
        "redirectedFrom": "www.skyscanner-example.net",
        "locale": "en-GB",
        "currency": "EUR",
        "market": "DE",
        "sid": f"{rnd.getrandbits(128):032x}",
        "srpvid": f"{rnd.getrandbits(64):016x}",
        "aid": str(rnd.randint(300000, 399999)),
        "label": "gen173nr-1FCAEoggI46AdIM1gEaDuIAQGYAQm4ARfIAQzYAQHoAQH4AQKIAgGoAgO4Ap"
        f"{rnd.getrandbits(40):010x}",
        "filters": f"price:0-{rnd.choice([400, 600, 900])};stops:0,1;"
        f"duration:0-{rnd.randint(300, 900)};"
        f"airlines:{','.join(rnd.sample(['TP', 'LH', 'IB', 'VY', 'FR', 'U2'], 3))}",
        "utm_source": "newsletter",
        "utm_medium": "email",
        "utm_campaign": f"autumn-deals-{rnd.randint(10, 99)}",
        "checkin": f"2025-11-{rnd.randint(10, 20)}",
        "checkout": f"2025-11-{rnd.randint(21, 28)}",
        "group_adults": "2",
        "group_children": "2",
        "age": "7",
        "age2": "4",
        "nflt": "review_score%3D80%3Bdistance%3D1000%3Bfc%3D2",
        "order": rnd.choice(["price", "popularity", "review_score_and_price"]),
        "dest_id": str(-rnd.randint(2100000, 2200000)),
        "dest_type": "city",
        "ac_position": "0",
        "search_selected": "true",
    }
    keys = rnd.sample(list(params), rnd.randint(12, len(params)))
    return base + "?" + urllib.parse.urlencode({k: params[k] for k in keys}, safe=":;,|%")


def _snapshot(rnd: random.Random, n: int) -> str:
    rows = [
        "- document [ref=e1]:",
        "  - banner [ref=e2]:",
        '    - link "Flights" [ref=e3]',
        '    - link "Hotels" [ref=e4]',
    ]
    for i in range(n):
        price = rnd.randint(89, 1400)
        rows.append(f'  - article "Result {i + 1}" [ref=e{100 + i * 7}]:')
        rows.append(f'    - heading "{rnd.choice(RESULT_NAMES)}" [level=3] [ref=e{101 + i * 7}]')
        rows.append(
            f'    - text: "{rnd.randint(5, 22):02d}:{rnd.choice(["05", "20", "45"])} – '
            f"{rnd.randint(8, 23):02d}:{rnd.choice(['10', '35', '55'])} · "
            f"{rnd.choice(['Direct', '1 stop', '2 stops'])} · "
            f'{rnd.randint(2, 14)}h {rnd.randint(0, 59)}m"'
        )
        rows.append(
            f'    - text: "€{price} total · '
            f"{rnd.choice(['Free cancellation', 'Non-refundable', 'Pay at property'])} · "
            f'rating {rnd.randint(60, 98) / 10}"'
        )
        rows.append(
            f'    - link "View deal" [ref=e{102 + i * 7}]: '
            f"/go/{rnd.getrandbits(96):024x}?pos={i}&src=srp"
        )
        rows.append(f'    - img "{prose(rnd, ENGLISH, 1)[:40]}" [ref=e{103 + i * 7}]')
    return "\n".join(rows)


def browser(out_dir: Path) -> list[Path]:
    """browser-805 (abridged JSONL): a browser-automation agent comparing flights and hotels.

    Each step navigates to a search results URL of 350-900 characters (query strings with
    filters, session and tracking parameters, as travel sites build them), takes an
    accessibility snapshot (HTML-ish page dumps of 40-120 KB), sometimes a screenshot (a real
    PNG in the tool result beside a text line), clicks and types. The agent's replies quote
    the result URL so the user can open it. The traveller's constraints are stated once at
    the start.
    """
    rnd = random.Random(805)
    ids = IdGen(rnd)
    shot = png(1280, 720)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": FIRST_PROMPT}]

    for step in range(16):
        if step:
            msgs.append({"role": "user", "content": rnd.choice(ASKS)})
        url = _long_url(rnd)
        t1, t2 = ids(), ids()
        navigate = tool_use(t1, "browser_navigate", url=url)
        msgs.append({"role": "assistant", "content": [text("Opening the search."), navigate]})
        navigated = f"Navigated to {url}\nPage title: {prose(rnd, ENGLISH, 1)[:60]}"
        msgs.append({"role": "user", "content": [tool_result(t1, navigated)]})
        msgs.append({"role": "assistant", "content": [tool_use(t2, "browser_snapshot")]})
        snapshot = _snapshot(rnd, rnd.randint(90, 260))
        msgs.append({"role": "user", "content": [tool_result(t2, snapshot)]})
        if step % 3 == 0:
            t3 = ids()
            name = f"results-{step:02d}.png"
            screenshot = tool_use(t3, "browser_take_screenshot", filename=name)
            msgs.append({"role": "assistant", "content": [screenshot]})
            image = {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": shot},
            }
            saved = [{"type": "text", "text": f"Saved {name}"}, image]
            msgs.append({"role": "user", "content": [tool_result(t3, saved)]})
        if step % 2 == 1:
            t4, t5 = ids(), ids()
            click = tool_use(
                t4, "browser_click", element="Sort by: Cheapest", ref=f"e{rnd.randint(10, 99)}"
            )
            msgs.append({"role": "assistant", "content": [click]})
            msgs.append({"role": "user", "content": [tool_result(t4, "Clicked.")]})
            typed = tool_use(
                t5,
                "browser_type",
                element="Destination",
                ref=f"e{rnd.randint(10, 99)}",
                text=rnd.choice(["Porto", "Lisbon", "Faro", "Seville"]),
                submit=True,
            )
            msgs.append({"role": "assistant", "content": [typed]})
            msgs.append({"role": "user", "content": [tool_result(t5, "Typed and submitted.")]})
        price = rnd.randint(900, 2100)
        best = (
            f"Best option so far: {rnd.choice(['TAP', 'Iberia', 'Lufthansa'])} plus a "
            f"refundable apartment, {price} EUR for the four of you. "
            f"Results page: {url}\n\n" + prose(rnd, ENGLISH, rnd.randint(2, 4))
        )
        msgs.append({"role": "assistant", "content": [text(best)]})

    msgs.append(
        {
            "role": "user",
            "content": "Give me the three best links again and remind me of my constraints.",
        }
    )
    recap = (
        "Your constraints: nothing non-refundable, direct or one stop under 6 hours, hotel "
        "within 1 km of the old town, 1800 EUR all in, and no payment details."
    )
    msgs.append({"role": "assistant", "content": [text(recap)]})

    return write_abridged(
        out_path(out_dir, "browser-805.jsonl"),
        msgs,
        system=SYSTEM,
        tools=TOOLS,
        model="claude-sonnet-4-5",
    )
