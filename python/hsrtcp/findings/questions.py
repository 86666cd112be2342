"""The questions of the mitigation study (issue 21) and the paired contrasts that answer them.

Each contrast compares a *treatment* arm with a *reference* arm of the same block (same
scenario, same trip seed, hence the same emulated path). It is written so that the effect
reads as "what the mitigation does": for a knob that is on by default (F-RTO, TLP/RACK) the
treatment is the default and the reference the knob turned off; for one that is off by
default (no delayed ACKs, another rto_min) the treatment is the knob set.

The arm names are those of campaigns/mitigations.toml.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Contrast:
    treatment: str
    reference: str
    label: str


@dataclass(frozen=True)
class Question:
    key: str
    title: str
    contrasts: tuple[Contrast, ...]
    #: outcomes of its table (hsrtcp.findings.outcomes names); the first two are its figure's panels
    outcomes: tuple[str, ...]


#: the HSR scenarios (campaign labels) and the static control, in table order
HSR_SCENARIOS = ("cruise", "hole-exit", "urban", "mahimahi")
STATIC = "static"
#: the pooled group of the four HSR scenarios
ALL_HSR = "all HSR"
GROUPS = (*HSR_SCENARIOS, ALL_HSR, STATIC)

CC = (
    Contrast("hsrbbr", "bbr", "hsrbbr vs bbr"),
    Contrast("hsrbbr", "cubic", "hsrbbr vs cubic"),
    Contrast("bbr", "cubic", "bbr vs cubic"),
    Contrast("reno", "cubic", "reno vs cubic"),
)
FRTO = (Contrast("cubic", "cubic-frto-off", "F-RTO on vs off"),
        Contrast("bbr", "bbr-frto-off", "F-RTO on vs off (bbr)"))
QUICKACK = (Contrast("cubic-quickack", "cubic", "no delayed ACK vs delayed"),
            Contrast("bbr-quickack", "bbr", "no delayed ACK vs delayed (bbr)"))
RTO_MIN = (
    Contrast("cubic-rtomin50", "cubic", "rto_min 50 ms vs 200 ms"),
    Contrast("cubic-rtomin1000", "cubic", "rto_min 1 s vs 200 ms"),
)
TLP_RACK = (Contrast("cubic", "cubic-tlp-rack-off", "TLP+RACK on vs off"),)
#: A/A: the baseline run twice on the same path (campaigns/mitigations-aa.toml): only noise
NOISE = (Contrast("cubic-aa", "cubic", "cubic again vs cubic (A/A)"),)

#: the key of the A/A question: its intervals are the noise floor the others are held against
NOISE_KEY = "noise"

QUESTIONS = (
    Question("noise", "How big is the lab's noise? The same arm run twice on the same path", NOISE,
             ("goodput_bps", "timeouts", "spurious_timeouts", "spurious_rto_rate", "timeout_recovery_s",
              "interrupted", "dupack_rate", "p_d")),
    Question("cc", "Which congestion control does best on a train, and what does hsrbbr gain?", CC,
             ("goodput_bps", "timeouts", "spurious_timeouts", "timeout_recovery_s", "p_d")),
    Question("frto", "Does F-RTO help against spurious timeouts?", FRTO,
             ("goodput_bps", "spurious_timeouts", "spurious_rto_rate", "timeouts", "timeout_recovery_s")),
    Question("quickack", "Does acknowledging every segment (no delayed ACKs) help?", QUICKACK,
             ("goodput_bps", "spurious_timeouts", "dupack_rate", "timeouts", "interrupted")),
    Question("rto_min", "Does a lower or higher minimum RTO help?", RTO_MIN,
             ("goodput_bps", "spurious_timeouts", "timeouts", "timeout_recovery_s", "spurious_rto_rate")),
    Question("tlp_rack", "Do tail loss probes and RACK help?", TLP_RACK,
             ("goodput_bps", "timeouts", "timeout_recovery_s", "spurious_timeouts", "interrupted")),
    Question("static", "Does any of them hurt on a static path?", FRTO + QUICKACK + RTO_MIN + TLP_RACK + CC,
             ("goodput_bps", "p_d", "timeouts", "dupack_rate")),
)
BY_KEY = {q.key: q for q in QUESTIONS}


def groups_of(question: Question) -> tuple[str, ...]:
    """The scenario groups a question's table has: the static question only the static path."""
    return (STATIC,) if question.key == "static" else GROUPS
