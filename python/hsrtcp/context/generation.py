"""The network generation of a radio sample — ``2G``, ``3G``, ``4G``, ``5G NSA``, ``5G SA``
(docs/formats/radio.md) — the class dimension the seeds compare (S0's 3G vs 4G) and the
5G studies split by (NSA: an LTE anchor cell plus an NR secondary cell group; SA: NR alone).

A log that says it (G-NetTrack's ``NetworkMode``, the RRC signalling of a GSMTAP capture,
a lab log's ``generation`` column) gives it; otherwise it follows from the RAT name, as
Android and the modem tools spell it. A RAT this table does not know has no generation
(null), never a guess.
"""

from __future__ import annotations

GENERATIONS = ("2G", "3G", "4G", "5G NSA", "5G SA")

# RAT name (upper case, without spaces, dashes or underscores) -> generation
_RATS = {
    **dict.fromkeys(("GSM", "GPRS", "EDGE", "EGPRS", "CDMA", "1XRTT", "IDEN", "IS95"), "2G"),
    **dict.fromkeys(("UMTS", "WCDMA", "HSPA", "HSPA+", "HSPAP", "HSDPA", "HSUPA", "TDSCDMA", "EVDO",
                     "EVDOA", "EVDOB", "EVDO0", "EHRPD", "CDMA2000", "3G"), "3G"),
    **dict.fromkeys(("LTE", "LTEA", "LTE+", "LTECA", "4G", "4G+", "LTEADVANCED"), "4G"),
    **dict.fromkeys(("NRNSA", "5GNSA", "ENDC", "LTE+NR", "NSA"), "5G NSA"),
    # Android's network type NR is stand-alone 5G (NSA shows as LTE with an NR override)
    **dict.fromkeys(("NR", "NRSA", "5GSA", "SA"), "5G SA"),
}


def _key(rat: str) -> str:
    return "".join(ch for ch in rat.upper() if ch not in " -_")


def generation_of(rat: str | None) -> str | None:
    """The generation of a RAT name (``LTE`` -> ``4G``, ``EDGE`` -> ``2G``, ``NR`` -> ``5G SA``),
    or None when the name is missing or unknown (``5G`` alone says neither NSA nor SA)."""
    if rat is None:
        return None
    return _RATS.get(_key(rat))


def check_generation(value: str | None) -> str | None:
    """A generation as a log spells it, normalized (``5g nsa`` -> ``5G NSA``); ValueError for
    anything else (the caller names file and line)."""
    if value is None or not value.strip():
        return None
    norm = " ".join(value.strip().upper().split())
    for g in GENERATIONS:
        if norm == g.upper():
            return g
    raise ValueError(f"generation {value!r} is not one of {', '.join(GENERATIONS)}")
