"""Human-readable units for printed output (tables keep plain SI numbers)."""

from __future__ import annotations


def human_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    return f"{n:.2f} TB"


def human_rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    for unit in ("bit/s", "kbit/s", "Mbit/s", "Gbit/s"):
        if abs(bps) < 1000 or unit == "Gbit/s":
            return f"{bps:.0f} {unit}" if unit == "bit/s" else f"{bps:.2f} {unit}"
        bps /= 1000
    return f"{bps:.2f} Gbit/s"
