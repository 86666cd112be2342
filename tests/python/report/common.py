"""Helpers of the report tests: the fixture directory and running the CLI in-process."""

from __future__ import annotations

from pathlib import Path

from hsrtcp.cli import main

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"
RMAP = "time=Time:ms,carrier=Op,rat=Net,lac=TAC,cid=CI,speed=Vel:km/h,rsrp=RSRP,rsrq=RSRQ"


def run(args) -> int:
    try:
        return main([str(a) for a in args])
    except SystemExit as exc:  # `analyze` ends with SystemExit(code)
        return exc.code


def radio_log(path: Path, start: float, end: float, speed: float, handoff: bool) -> Path:
    first, last, mid = round(start * 1000) - 1000, round(end * 1000) + 1000, round((start + end) / 2 * 1000)
    lines = ["Time,Op,Net,TAC,CI,Vel,RSRP,RSRQ"]
    for ms in range(first, last, 2):
        lines.append(f"{ms},M,LTE,1,{8 if handoff and ms >= mid else 7},{speed},-80,-10")
    path.write_text("\n".join(lines) + "\n")
    return path
