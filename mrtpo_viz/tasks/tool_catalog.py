"""The catalogue of the bundled tool-calling family: 12 tools with JSON-schema parameters, the value pools their
enums and requests draw on, and the tags of the response format.

Data only: the tool-calling verifiers read schemas from it for examples that name a built-in tool, and the sample-data
generator (``tasks/generators/tool_calling.py``) builds requests from it; neither imports the other.
"""

from __future__ import annotations

from typing import Any

OPEN_TAG, CLOSE_TAG = "<tool_call>", "</tool_call>"

CITIES = (
    "Paris",
    "Tokyo",
    "Lima",
    "Cairo",
    "Oslo",
    "Berlin",
    "Madrid",
    "Toronto",
    "Sydney",
    "Nairobi",
    "Seoul",
    "Dublin",
    "Chicago",
    "Lisbon",
    "Mumbai",
    "Rome",
    "Vienna",
    "Denver",
    "Prague",
    "Boston",
)
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "INR")
LANGUAGES = ("French", "Spanish", "German", "Italian", "Japanese", "Portuguese")
SYMBOLS = ("AAPL", "MSFT", "NVDA", "TSLA", "AMZN", "GOOG", "IBM", "KO", "NFLX", "INTC", "ORCL", "PEP", "DIS", "NKE")
UNITS = {"length": ("km", "miles", "meters", "feet"), "mass": ("kg", "pounds", "grams", "ounces")}
PHRASES = (
    "good morning",
    "where is the station",
    "thank you very much",
    "I like this song",
    "see you tomorrow",
    "the soup is hot",
    "how much is this",
    "my name is Sam",
    "the bus is late",
    "I am lost",
    "one coffee please",
    "happy new year",
    "open the window",
    "where is my hotel",
)
EVENTS = ("Team sync", "Dentist", "Lunch with Ana", "Project review", "Yoga class", "Call mom", "Budget meeting")
LABELS = ("wake up", "gym", "meds", "school run", "standup")
CONTACTS = ("Ana", "Ben", "Chloe", "David", "Emma", "Farid", "Grace", "Hugo", "Ines", "Jonas", "Kemi", "Leo")
MESSAGES = (
    "running late",
    "call me back",
    "dinner at eight",
    "meeting moved",
    "happy birthday",
    "on my way",
    "see you at noon",
    "bring the keys",
    "good luck today",
    "the train is delayed",
)
NEWS_TOPICS = ("climate", "football", "science", "elections", "technology", "music")
CUISINES = ("italian", "thai", "mexican", "indian", "japanese")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def _p(type_: str, description: str, enum: tuple[str, ...] | None = None) -> dict[str, Any]:
    """One JSON-schema property."""
    prop: dict[str, Any] = {"type": type_, "description": description}
    if enum is not None:
        prop["enum"] = list(enum)
    return prop


def _tool(name: str, description: str, props: dict[str, dict], required: tuple[str, ...]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": props, "required": list(required)},
    }


ALL_UNITS = UNITS["length"] + UNITS["mass"]
TOOLS: dict[str, dict[str, Any]] = {
    t["name"]: t
    for t in (
        _tool(
            "get_weather",
            "Current weather for a city.",
            {"city": _p("string", "City name"), "unit": _p("string", "Temperature unit", ("celsius", "fahrenheit"))},
            ("city",),
        ),
        _tool(
            "convert_currency",
            "Convert an amount between currencies.",
            {
                "amount": _p("number", "Amount to convert"),
                "from_currency": _p("string", "ISO code", CURRENCIES),
                "to_currency": _p("string", "ISO code", CURRENCIES),
            },
            ("amount", "from_currency", "to_currency"),
        ),
        _tool(
            "search_flights",
            "Search flights between two cities.",
            {
                "origin": _p("string", "Departure city"),
                "destination": _p("string", "Arrival city"),
                "date": _p("string", "YYYY-MM-DD"),
                "passengers": _p("integer", "Number of passengers"),
            },
            ("origin", "destination", "date"),
        ),
        _tool(
            "create_calendar_event",
            "Add an event to the calendar.",
            {
                "title": _p("string", "Event title"),
                "date": _p("string", "YYYY-MM-DD"),
                "time": _p("string", "HH:MM, 24-hour"),
                "duration_minutes": _p("integer", "Length in minutes"),
            },
            ("title", "date", "time"),
        ),
        _tool(
            "set_alarm",
            "Set an alarm.",
            {
                "time": _p("string", "HH:MM, 24-hour"),
                "label": _p("string", "Alarm label"),
                "repeat_daily": _p("boolean", "Repeat every day"),
            },
            ("time",),
        ),
        _tool("set_timer", "Start a countdown timer.", {"minutes": _p("integer", "Duration in minutes")}, ("minutes",)),
        _tool(
            "convert_units",
            "Convert a quantity between units.",
            {
                "value": _p("number", "Quantity"),
                "from_unit": _p("string", "Source unit", ALL_UNITS),
                "to_unit": _p("string", "Target unit", ALL_UNITS),
            },
            ("value", "from_unit", "to_unit"),
        ),
        _tool(
            "translate_text",
            "Translate text into another language.",
            {"text": _p("string", "Text to translate"), "target_language": _p("string", "Language", LANGUAGES)},
            ("text", "target_language"),
        ),
        _tool(
            "get_stock_price",
            "Latest stock price.",
            {"symbol": _p("string", "Ticker symbol"), "exchange": _p("string", "Exchange", ("NASDAQ", "NYSE"))},
            ("symbol",),
        ),
        _tool(
            "send_message",
            "Send a text message to a contact.",
            {"recipient": _p("string", "Contact name"), "message": _p("string", "Message text")},
            ("recipient", "message"),
        ),
        _tool(
            "get_news",
            "Latest headlines on a topic.",
            {"topic": _p("string", "News topic"), "limit": _p("integer", "Number of headlines")},
            ("topic",),
        ),
        _tool(
            "book_restaurant",
            "Book a table at a restaurant.",
            {
                "city": _p("string", "City"),
                "party_size": _p("integer", "Number of people"),
                "time": _p("string", "HH:MM, 24-hour"),
                "cuisine": _p("string", "Cuisine", CUISINES),
            },
            ("city", "party_size", "time"),
        ),
    )
}
"""The catalogue: name -> ``{"name", "description", "parameters"}`` (a JSON schema of type object)."""
