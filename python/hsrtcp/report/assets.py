"""The files the report inlines: uPlot (installed with npm at build time) and the report's own
script, stylesheet and page template (python/hsrtcp/report/static/).

uPlot is not committed: ``make build`` runs ``npm ci --omit=dev`` in python/hsrtcp/report/js/
(package.json and package-lock.json pin the version) when node_modules is missing. The report
reads the library's dist files from there at generation time, so the HTML file works offline.
"""

from __future__ import annotations

from pathlib import Path

from hsrtcp.errors import HsrtcpError

HERE = Path(__file__).resolve().parent
JS_DIR = HERE / "js"
STATIC = HERE / "static"
UPLOT_JS = JS_DIR / "node_modules" / "uplot" / "dist" / "uPlot.iife.min.js"
UPLOT_CSS = JS_DIR / "node_modules" / "uplot" / "dist" / "uPlot.min.css"


class MissingAssetError(HsrtcpError, RuntimeError):
    """A bundled JavaScript library is not installed (npm ci was not run)."""


def uplot() -> tuple[str, str]:
    """uPlot's minified script and stylesheet, as text."""
    if not UPLOT_JS.exists() or not UPLOT_CSS.exists():
        raise MissingAssetError(
            f"the charting library uPlot is not installed ({UPLOT_JS} is missing). "
            f"Install it with `make build`, or by hand: `cd {JS_DIR} && npm ci --omit=dev` "
            "(needs Node.js and npm, https://nodejs.org; the report itself then works offline)")
    return UPLOT_JS.read_text(encoding="utf-8"), UPLOT_CSS.read_text(encoding="utf-8")


def static(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def uplot_version() -> str | None:
    import json

    try:
        return json.loads((JS_DIR / "node_modules" / "uplot" / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None
