"""M33 subflow degradation with its onset, by A25's rule.

S4 gives no rule for "a sudden fall in throughput and sustained inefficiency afterwards";
A25 proposes one on the 1-s subflow rate r'(t) and the concurrent single-path rate r(t) on
the same carrier. The subflow is degraded at t_d (the first second where all hold) if

(i)   mean r' over [t_d − window, t_d) ≥ ``before`` × mean r over that window (it was doing well),
(ii)  r'(t_d) ≤ ``drop`` × mean r' over [t_d − window, t_d) (a sudden fall),
(ii') mean r' over [t_d, t_d + ``hold_s``) ≤ ``drop`` × that same mean (the fall lasts),
(iii) mean r' over [t_d, end) ≤ ``after`` × mean r over [t_d, end), with end − t_d ≥ ``min_after_s``
      (it stays inefficient while single-path TCP on the same carrier does better).

Defaults are A25's proposals (window 10 s, before 0.5, drop 0.5, after 0.3, 20 s); they are
meant to be calibrated against T4-26, so every one is a parameter.

(ii') is ours (``hold_s`` 3; 1 gives A25 as written). The kernel's scheduler leaves a subflow
idle for single seconds (a lab run: 6.02, 0.0, 5.99 Mbit/s), and because (iii) averages the whole
tail, such a dip shortly before a lasting fall met (i)–(iii) and took the onset: a CI run put
a backup switch made at 15 s at 12 s. S4's "sudden fall ... and sustained inefficiency
afterwards" is not a second's dip, so the fall must hold for a few seconds on average.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DegradationRule:
    window_s: int = 10
    before: float = 0.5
    drop: float = 0.5
    after: float = 0.3
    min_after_s: int = 20
    hold_s: int = 3

    def describe(self) -> str:
        return (f"A25: window {self.window_s} s, before ≥ {self.before}, drop ≤ {self.drop} "
                f"(held {self.hold_s} s), after ≤ {self.after} over ≥ {self.min_after_s} s")


@dataclass(frozen=True)
class Degradation:
    onset_s: int
    before_ratio: float | None  # mean r' / mean r over the window before t_d
    drop_ratio: float | None  # r'(t_d) / mean r' before
    after_ratio: float | None  # mean r' / mean r from t_d to the end


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None


def _falls(sub: list[float], single: list[float], rule: DegradationRule):
    """Seconds t that meet (i) and (ii): a sudden fall of a subflow that was doing well."""
    n = min(len(sub), len(single))
    w = rule.window_s
    for t in range(w, n):
        pre_sub, pre_single = _mean(sub[t - w:t]), _mean(single[t - w:t])
        if pre_sub <= 0 or pre_sub < rule.before * pre_single:
            continue
        if sub[t] > rule.drop * pre_sub:
            continue
        yield t, pre_sub, pre_single


def first_fall(sub: list[float], single: list[float], rule: DegradationRule = DegradationRule()) -> int | None:
    """First second meeting (i) and (ii) only: the sudden fall, whether or not it lasts. A
    carrier outage gives one on both the subflow and the single-path flow of that carrier."""
    return next((t for t, _, _ in _falls(sub, single, rule)), None)


def detect(sub: list[float], single: list[float], rule: DegradationRule = DegradationRule()) -> Degradation | None:
    """First t_d (seconds from the instance start) at which ``sub`` (r', bit/s per second)
    degrades against ``single`` (r, same seconds) by (i), (ii), (ii') and (iii); None when it
    never does."""
    n = min(len(sub), len(single))
    for t, pre_sub, pre_single in _falls(sub, single, rule):
        if n - t < rule.min_after_s:
            break
        if _mean(sub[t:t + max(1, rule.hold_s)]) > rule.drop * pre_sub:
            continue  # (ii'): a dip that recovered at once
        post_sub, post_single = _mean(sub[t:n]), _mean(single[t:n])
        if post_single <= 0 or post_sub > rule.after * post_single:
            continue
        return Degradation(t, _ratio(pre_sub, pre_single), sub[t] / pre_sub, _ratio(post_sub, post_single))
    return None
