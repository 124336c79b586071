"""The words that name values, for :mod:`memoryd.cognition.slots`: months, weekdays,
frequencies, colours, number words, quantifiers, parts of the day, ordinals and units.

Each table maps a spelling to its normal form, so that two spellings of one value compare
equal ("nightly" and "daily", "ms" and "milliseconds", "every" and "all").
"""

from __future__ import annotations

MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4,
    "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8,
    "sep": 9, "sept": 9, "september": 9, "oct": 10, "october": 10, "nov": 11,
    "november": 11, "dec": 12, "december": 12,
}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
FREQUENCY = {
    "hourly": "hourly", "daily": "daily", "nightly": "daily", "weekly": "weekly",
    "biweekly": "biweekly", "fortnightly": "biweekly", "monthly": "monthly",
    "quarterly": "quarterly", "yearly": "yearly", "annually": "yearly", "annual": "yearly",
}
COLOURS = frozenset(
    "red orange yellow green blue purple violet pink black white grey gray brown teal cyan "
    "magenta navy beige".split())
NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100, "twice": 2, "dozen": 12,
}
QUANTIFIERS = {
    "all": "all", "every": "all", "each": "all", "most": "most", "majority": "most",
    "many": "many", "several": "several", "some": "some", "few": "few", "minority": "few",
    "both": "both", "half": "half", "only": "only",
    # comparatives and how often: "less", "usually", "rarely"
    "more": "more", "less": "less", "fewer": "less", "least": "least", "better": "better",
    "worse": "worse", "always": "always", "usually": "usually", "often": "often",
    "sometimes": "sometimes", "occasionally": "sometimes", "rarely": "rarely",
    "seldom": "rarely",
}
DAYPARTS = {
    "morning": "morning", "mornings": "morning", "afternoon": "afternoon",
    "afternoons": "afternoon", "evening": "evening", "evenings": "evening",
    "noon": "noon", "midday": "noon", "midnight": "midnight", "tonight": "tonight",
    "today": "today", "tomorrow": "tomorrow", "yesterday": "yesterday",
    "weekend": "weekend", "weekends": "weekend",
}
ORDINALS = frozenset(
    "first second third fourth fifth sixth seventh eighth ninth tenth last".split())
SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "billion": 1e9, "bn": 1e9}

# A unit after a number ("10 MB", "30-day", "250ms"), spelling -> normal form.
UNITS = {
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds"), "ms"),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), "s"),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), "min"),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), "h"),
    **dict.fromkeys(("day", "days"), "d"),
    **dict.fromkeys(("wk", "wks", "week", "weeks"), "wk"),
    **dict.fromkeys(("month", "months"), "mo"),
    **dict.fromkeys(("yr", "yrs", "year", "years"), "y"),
    **dict.fromkeys(("b", "byte", "bytes"), "b"),
    **dict.fromkeys(("kb", "kib", "kilobyte", "kilobytes"), "kb"),
    **dict.fromkeys(("mb", "mib", "megabyte", "megabytes"), "mb"),
    **dict.fromkeys(("gb", "gib", "gigabyte", "gigabytes"), "gb"),
    **dict.fromkeys(("tb", "tib", "terabyte", "terabytes"), "tb"),
    **dict.fromkeys(("pb", "petabyte", "petabytes"), "pb"),
    **dict.fromkeys(("px", "pixel", "pixels"), "px"),
    "em": "em", "rem": "rem", "pt": "pt",
    **dict.fromkeys(("km", "kilometre", "kilometres", "kilometer", "kilometers"), "km"),
    **dict.fromkeys(("mi", "mile", "miles"), "mi"),
    **dict.fromkeys(("kg", "kilo", "kilos", "kilogram", "kilograms"), "kg"),
    **dict.fromkeys(("lb", "lbs", "pound", "pounds"), "lb"),
    "ghz": "ghz", "mhz": "mhz", "hz": "hz", "kbps": "kbps", "mbps": "mbps", "gbps": "gbps",
    "rps": "rps", "qps": "qps", "rpm": "rpm", "fps": "fps", "x": "x",
}
UNIT_PATTERN = "|".join(sorted((u.replace(".", r"\.") for u in UNITS), key=len, reverse=True))
# A unit named without a number ("reported in milliseconds"): plurals and data sizes only,
# so that "every second Monday" or "a day off" are no units.
WORD_UNITS = {w: u for w, u in UNITS.items()
              if (w.endswith("s") and len(w) > 4) or u in ("kb", "mb", "gb", "tb", "pb")}
