"""LTE and NR RRC messages: decoding (pycrate's ASN.1 definitions of 3GPP TS 36.331 and
38.331, unaligned PER), the handoffs they make, and builders of the messages for fixtures.

:class:`Tracker` follows one phone's RRC connection message by message and writes a handoff
row for every mobility command (docs/formats/handoffs.md, ``type``):

- LTE ``RRCConnectionReconfiguration`` with ``mobilityControlInfo``: a handover to
  ``targetPhysCellId`` on ``carrierFreq`` (absent: the source's frequency): ``intra_freq``,
  ``inter_freq`` (``intra_rat`` when the source channel is not known), ``mcg_ho`` when an NR
  secondary cell group (5G NSA) is configured;
- its ``nr-Config-r15`` (EN-DC): ``setup`` with an NR ``reconfigurationWithSync`` in the
  secondary cell group adds the SCG (``scg_add``) or changes its primary cell
  (``scg_modify``), ``release`` releases it (``scg_release``);
- LTE ``MobilityFromEUTRACommand`` and NR ``MobilityFromNRCommand``: ``inter_rat``;
- NR ``RRCReconfiguration`` with ``reconfigurationWithSync`` in the master cell group:
  ``sa_ho`` (5G SA), in the secondary cell group: an SCG change sent on NR's own bearer;
- LTE ``RRCConnectionReestablishmentRequest`` and NR ``RRCReestablishmentRequest`` (after a
  radio link failure or a failed handover): ``reestablishment``, with the cause.

A command's execution time (``execution_s``) runs to the completion with the same RRC
transaction identifier (``RRCConnectionReconfigurationComplete``, NR
``RRCReconfigurationComplete``; a re-establishment to its ``…ReestablishmentComplete``). A
command overtaken by a re-establishment before it completes has cause ``failed`` and no
execution time.

Only the messages a handoff can come from are decoded in full; the others are recognised by
their message type (the first bits of the PER encoding) and counted.
"""

from __future__ import annotations

import math
from functools import cache

import polars as pl

from hsrtcp.context.generation import generation_of

UNNAMED_CARRIER = "-"


class RRCError(ValueError):
    """A message that does not decode."""


@cache
def _asn():
    """pycrate's LTE and NR RRC definitions (about 2 s to load: only when a capture is read)."""
    from pycrate_asn1dir import RRCLTE, RRCNR

    return RRCLTE.EUTRA_RRC_Definitions, RRCNR.NR_RRC_Definitions


_OBJ = {("LTE", c): f"{c}_Message" for c in ("DL_CCCH", "DL_DCCH", "UL_CCCH", "UL_DCCH")}
_OBJ.update({("NR", c): f"{c}_Message" for c in ("DL_CCCH", "DL_DCCH", "UL_CCCH", "UL_DCCH")})


def _obj(rat: str, channel: str):
    lte, nr = _asn()
    return getattr(lte if rat == "LTE" else nr, _OBJ[(rat, channel)])


@cache
def _peek_table(rat: str, channel: str) -> tuple[int, tuple[str, ...]]:
    """(bits of the c1 index, c1 alternatives in index order) of a message type: the outer
    CHOICE {c1, messageClassExtension} takes one bit, c1 the next ceil(log2 n)."""
    c1 = _obj(rat, channel)._cont["message"]._cont["c1"]
    names = tuple(c1._cont.keys())
    if c1._ext is not None or _obj(rat, channel)._cont["message"]._ext is not None:
        raise RuntimeError(f"{rat} {channel}: message type with an extension marker (pycrate changed?)")
    return max(1, math.ceil(math.log2(len(names)))), names


def peek(rat: str, channel: str, payload: bytes) -> str | None:
    """The message type of a PER-encoded RRC message (``rrcConnectionReconfiguration`` …),
    ``messageClassExtension`` for the later classes, None for an empty payload."""
    if not payload:
        return None
    bits, names = _peek_table(rat, channel)
    v = int.from_bytes(payload[:2].ljust(2, b"\x00"), "big")
    if v >> 15:
        return "messageClassExtension"
    i = (v >> (15 - bits)) & ((1 << bits) - 1)
    return names[i] if i < len(names) else None


def decode(rat: str, channel: str, payload: bytes):
    """The decoded message (pycrate's value: dicts, (name, value) tuples for CHOICEs, lists);
    :class:`RRCError` when it does not decode."""
    o = _obj(rat, channel)
    try:
        o.from_uper(payload)
        return o.get_val()
    except Exception as exc:  # noqa: BLE001 - pycrate raises many types for bad input
        raise RRCError(f"{rat} {channel}: {type(exc).__name__}: {str(exc)[:120]}") from None


def find(value, key: str):
    """The first value under ``key`` anywhere in a decoded message (depth first), else None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if key in v:
                return v[key]
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str):
            if v[0] == key:
                return v[1]
            stack.append(v[1])
        elif isinstance(v, list):
            stack.extend(reversed(v))
    return None


def _message(value) -> tuple[str, dict]:
    """(message name, its body) of a decoded ``…-Message``."""
    _, (name, body) = value["message"]
    return name, body


def _sync_target(cell_group) -> tuple[int | None, int | None] | None:
    """(physCellId, absoluteFrequencySSB) of a CellGroupConfig's reconfigurationWithSync, or None."""
    if isinstance(cell_group, tuple):  # OCTET STRING (CONTAINING CellGroupConfig) decoded
        cell_group = cell_group[1]
    if isinstance(cell_group, (bytes, bytearray)):
        _, nr = _asn()
        try:
            nr.CellGroupConfig.from_uper(bytes(cell_group))
        except Exception as exc:  # noqa: BLE001
            raise RRCError(f"NR CellGroupConfig: {type(exc).__name__}: {str(exc)[:120]}") from None
        cell_group = nr.CellGroupConfig.get_val()
    sync = find(cell_group, "reconfigurationWithSync")
    if sync is None:
        return None
    common = sync.get("spCellConfigCommon") or {}
    return common.get("physCellId"), find(common, "absoluteFrequencySSB")


#: (channel, message) of each RAT -> what the message does in both (RRC's LTE and NR names)
_COMMON = {
    "LTE": {("DL_DCCH", "mobilityFromEUTRACommand"): "mobility", ("DL_DCCH", "rrcConnectionRelease"): "release",
            ("UL_DCCH", "rrcConnectionReconfigurationComplete"): "complete",
            ("UL_DCCH", "rrcConnectionReestablishmentComplete"): "reestablished",
            ("UL_CCCH", "rrcConnectionReestablishmentRequest"): "reestablish"},
    "NR": {("DL_DCCH", "mobilityFromNRCommand"): "mobility", ("DL_DCCH", "rrcRelease"): "release",
           ("UL_DCCH", "rrcReconfigurationComplete"): "complete",
           ("UL_DCCH", "rrcReestablishmentComplete"): "reestablished",
           ("UL_CCCH", "rrcReestablishmentRequest"): "reestablish"},
}


def _nr_reconfiguration(data: bytes) -> dict:
    """An NR RRCReconfiguration carried in an LTE message (EN-DC's nr-SecondaryCellGroupConfig)."""
    _, nr = _asn()
    try:
        nr.RRCReconfiguration.from_uper(bytes(data))
    except Exception as exc:  # noqa: BLE001
        raise RRCError(f"NR RRCReconfiguration in nr-Config-r15: {type(exc).__name__}: {str(exc)[:120]}") from None
    return nr.RRCReconfiguration.get_val()


TARGET_RATS = {"utra": "UMTS", "geran": "GSM", "cdma2000-1XRTT": "CDMA2000", "cdma2000-HRPD": "EVDO",
               "nr": "NR", "eutra": "LTE", "utra-FDD": "UMTS", "utra-TDD": "TD-SCDMA"}


class Tracker:
    """One phone's RRC state, fed message by message (see the module doc); :meth:`tables`
    gives the radio frame (a sample at every change and one per second of signalling) and
    the handoff rows. ``skipped``: the reader's counts per reason (decoding errors go there)."""

    def __init__(self, source: str, skipped: dict, carrier: str = UNNAMED_CARRIER):
        self.source, self.skipped, self.carrier = source, skipped, carrier
        self.rat: str | None = None
        self.pci: int | None = None
        self.arfcn: int | None = None
        self.scg: tuple[int | None, int | None] | None = None  # NR PSCell (pci, ssb arfcn)
        self.messages: dict[str, int] = {}
        self.rows: list[dict] = []      # handoffs
        self.samples: list[tuple] = []  # radio rows
        self.pending: dict[tuple[str, int], int] = {}  # (rat, transaction id) -> row index
        self.reest: int | None = None   # row index of an open re-establishment
        self._second: int | None = None

    # -- state --------------------------------------------------------------------------
    def generation(self) -> str | None:
        if self.rat == "LTE":
            return "5G NSA" if self.scg is not None else "4G"
        return generation_of(self.rat)

    def _state(self) -> dict:
        return {"rat": self.rat, "cid": self.pci, "arfcn": self.arfcn, "generation": self.generation()}

    def _sample(self, pkt: int, ts: float, force: bool = False) -> None:
        sec = math.floor(ts)
        if not force and sec == self._second:
            return
        self._second = sec
        row = (ts, self.rat, self.pci, self.arfcn, self.generation(), pkt)
        if self.samples and self.samples[-1][0] == ts:
            self.samples[-1] = row  # one sample per instant: the state after it
        else:
            self.samples.append(row)

    def _handoff(self, pkt: int, ts: float, kind: str, old: dict, target=(None, None), tid=None,
                 cause=None) -> None:
        new = self._state()
        self.rows.append({"ts": ts, "line": pkt, "type": kind, "cause": cause,
                          "target_pci": target[0], "target_arfcn": target[1],
                          **{f"old_{k}": v for k, v in old.items()}, **{f"new_{k}": v for k, v in new.items()}})
        if tid is not None:
            self.pending[tid] = len(self.rows) - 1
        self._sample(pkt, ts, force=True)

    def _complete(self, key, ts: float) -> None:
        i = self.pending.pop(key, None)
        if i is not None:
            self.rows[i]["execution_s"] = round(ts - self.rows[i]["ts"], 6)

    # -- messages -----------------------------------------------------------------------
    def feed(self, pkt: int, ts: float, rat: str, channel: str, payload: bytes, arfcn: int | None = None) -> None:
        kind = peek(rat, channel, payload)
        if kind is None:
            self._bad(rat, pkt)
            return
        if self.rat is None:
            self.rat = rat
        if arfcn is not None and rat == self.rat and self.arfcn is None:
            self.arfcn = arfcn
        try:
            if rat == "LTE":
                self._lte(pkt, ts, channel, kind, payload, arfcn)
            else:
                self._nr(pkt, ts, channel, kind, payload, arfcn)
        except (RRCError, KeyError, TypeError, ValueError, AttributeError, IndexError):
            # (a message that decodes into a structure 3GPP does not allow is as bad as one that does not)
            self._bad(rat, pkt)
            return
        self.messages[f"{rat} {kind}"] = self.messages.get(f"{rat} {kind}", 0) + 1
        self._sample(pkt, ts)

    def _bad(self, rat: str, pkt: int) -> None:
        reason = f"undecodable {rat} RRC"
        c = self.skipped.get(reason)
        if c is None:
            self.skipped[reason] = [1, pkt]
        else:
            c[0] += 1

    def _fail_pending(self) -> None:
        for i in self.pending.values():
            self.rows[i]["cause"] = "failed"
        self.pending.clear()

    def _lte(self, pkt, ts, channel, kind, payload, arfcn) -> None:
        if channel == "DL_DCCH" and kind == "rrcConnectionReconfiguration":
            name, body = _message(decode("LTE", channel, payload))
            tid = ("LTE", body["rrc-TransactionIdentifier"])
            self.pending.pop(tid, None)  # a new command with this identifier supersedes the old
            mci = find(body, "mobilityControlInfo")
            nrc = find(body, "nr-Config-r15")
            scg_change = None  # ("release",) or ("setup", target or None)
            if nrc is not None:
                if nrc[0] == "release":
                    scg_change = ("release",)
                else:
                    inner = nrc[1].get("nr-SecondaryCellGroupConfig-r15")
                    target = None
                    if inner is not None:
                        target = _sync_target(find(_nr_reconfiguration(inner), "secondaryCellGroup"))
                    scg_change = ("setup", target)
            old = self._state()
            if mci is not None:
                target_pci = mci.get("targetPhysCellId")
                cf = mci.get("carrierFreq")
                target_arfcn = cf.get("dl-CarrierFreq") if cf else self.arfcn
                if cf and target_arfcn == 65535:  # maxEARFCN: the real value is in an extension
                    target_arfcn = find(body, "dl-CarrierFreq-v9e0") or target_arfcn
                if self.scg is not None:
                    ho = "mcg_ho"
                elif cf is None or (self.arfcn is not None and target_arfcn == self.arfcn):
                    ho = "intra_freq"
                elif self.arfcn is not None:
                    ho = "inter_freq"
                else:
                    ho = "intra_rat"  # the source channel is not known
                self.rat, self.pci, self.arfcn = "LTE", target_pci, target_arfcn
                if scg_change and scg_change[0] == "release":
                    self.scg = None
                elif scg_change and scg_change[1] is not None:
                    self.scg = scg_change[1]
                self._handoff(pkt, ts, ho, old, (target_pci, target_arfcn), tid)
            elif scg_change is not None:
                if scg_change[0] == "release":
                    if self.scg is not None:
                        self.scg = None
                        self._handoff(pkt, ts, "scg_release", old, tid=tid)
                elif scg_change[1] is not None:
                    ho = "scg_modify" if self.scg is not None else "scg_add"
                    self.scg = scg_change[1]
                    self._handoff(pkt, ts, ho, old, scg_change[1], tid)
        elif channel == "DL_CCCH" and kind == "rrcConnectionReestablishmentReject":
            self.reest = None
            self.pci, self.arfcn = None, None
        else:
            self._common(pkt, ts, "LTE", (channel, kind), payload, arfcn)

    def _reestablish(self, pkt, ts, rat, failed_pci, cause, arfcn) -> None:
        self._fail_pending()
        old = self._state()
        if failed_pci is not None:
            old["cid"] = failed_pci  # the cell the connection failed in, as the phone says
        # the phone re-establishes in the cell it now camps on (not in the message)
        self.rat, self.pci, self.arfcn, self.scg = rat, None, arfcn, None
        self._handoff(pkt, ts, "reestablishment", old, cause=cause)
        self.reest = len(self.rows) - 1

    def _nr(self, pkt, ts, channel, kind, payload, arfcn) -> None:
        if channel == "DL_DCCH" and kind == "rrcReconfiguration":
            _, body = _message(decode("NR", channel, payload))
            tid = ("NR", body["rrc-TransactionIdentifier"])
            self.pending.pop(tid, None)
            mcg = find(body, "masterCellGroup")
            scg = find(body, "secondaryCellGroup")
            old = self._state()
            master = _sync_target(mcg) if mcg is not None else None
            second = _sync_target(scg) if scg is not None else None
            if master is not None:
                self.rat, self.pci, self.arfcn, self.scg = "NR", master[0], master[1], None
                self._handoff(pkt, ts, "sa_ho", old, master, tid)
            elif second is not None and self.rat == "LTE":
                ho = "scg_modify" if self.scg is not None else "scg_add"
                self.scg = second
                self._handoff(pkt, ts, ho, old, second, tid)
        else:
            self._common(pkt, ts, "NR", (channel, kind), payload, arfcn)

    # -- messages of both RATs (LTE and NR name them differently) --------------------------

    def _common(self, pkt, ts, rat, message, payload, arfcn) -> None:
        """A message both RATs have (:data:`_COMMON`, by its RAT's name); others are ignored."""
        what = _COMMON[rat].get(message)
        channel = message[0]
        if what == "mobility":
            self._mobility_from(pkt, ts, rat, channel, payload)
        elif what == "release":
            self._released()
        elif what == "complete":
            _, body = _message(decode(rat, channel, payload))
            self._complete((rat, body["rrc-TransactionIdentifier"]), ts)
        elif what == "reestablished":
            self._reestablished(ts)
        elif what == "reestablish":
            self._reestablish_request(pkt, ts, rat, channel, payload, arfcn)

    def _mobility_from(self, pkt, ts, rat, channel, payload) -> None:
        """A command to leave for another RAT (mobilityFromEUTRACommand / mobilityFromNRCommand)."""
        _, body = _message(decode(rat, channel, payload))
        target = find(body, "targetRAT-Type")
        old = self._state()
        self.rat = TARGET_RATS.get(target, target) if target else None
        self.pci, self.arfcn, self.scg = None, None, None
        self._handoff(pkt, ts, "inter_rat", old)

    def _released(self) -> None:
        self._fail_pending()
        self.pci, self.arfcn, self.scg = None, None, None  # idle: reselections are not signalled

    def _reestablished(self, ts) -> None:
        if self.reest is not None:
            self.rows[self.reest]["execution_s"] = round(ts - self.rows[self.reest]["ts"], 6)
            self.reest = None

    def _reestablish_request(self, pkt, ts, rat, channel, payload, arfcn) -> None:
        _, body = _message(decode(rat, channel, payload))
        ident = find(body, "ue-Identity") or {}
        cause = find(body, "reestablishmentCause")
        self._reestablish(pkt, ts, rat, ident.get("physCellId"), cause, arfcn)

    # -- output -------------------------------------------------------------------------
    def tables(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(radio frame, handoff rows) in the radio and handoffs schemas."""
        from hsrtcp.context.handoffs import finish
        from hsrtcp.context.schema import conform

        s = self.samples
        frame = pl.DataFrame({"ts": [r[0] for r in s], "rat": [r[1] for r in s], "cid": [r[2] for r in s],
                              "arfcn": [r[3] for r in s], "generation": [r[4] for r in s],
                              "line": [r[5] for r in s]},
                             schema={"ts": pl.Float64, "rat": pl.String, "cid": pl.Int64, "arfcn": pl.Int64,
                                     "generation": pl.String, "line": pl.Int64})
        frame = frame.with_columns(pl.when(pl.col("rat").is_not_null()).then(pl.lit(self.carrier))
                                   .alias("carrier"), pl.lit(self.source).alias("source"))
        cols = {"ts": pl.Float64, "line": pl.Int64, "type": pl.String, "cause": pl.String,
                "target_pci": pl.Int64, "target_arfcn": pl.Int64, "execution_s": pl.Float64,
                **{f"{p}_{k}": t for p in ("old", "new") for k, t in
                   (("rat", pl.String), ("cid", pl.Int64), ("arfcn", pl.Int64), ("generation", pl.String))}}
        h = pl.DataFrame([{c: r.get(c) for c in cols} for r in self.rows], schema=cols) if self.rows \
            else pl.DataFrame(schema=cols)
        h = h.with_columns(pl.lit(self.carrier).alias("carrier"), pl.lit(self.source).alias("source"),
                           pl.lit(None, pl.String).alias("run_id"))
        return conform(frame), finish(h)


# ------------------------------------------------------------------------------------------
# builders (fixtures, benchmark): the smallest valid messages that carry what a handoff needs

_RRCC = {"prach-Config": {"rootSequenceIndex": 0},
         "pusch-ConfigCommon": {"pusch-ConfigBasic": {"n-SB": 1, "hoppingMode": "interSubFrame",
                                                      "pusch-HoppingOffset": 0, "enable64QAM": False},
                                "ul-ReferenceSignalsPUSCH": {"groupHoppingEnabled": False, "groupAssignmentPUSCH": 0,
                                                             "sequenceHoppingEnabled": False, "cyclicShift": 0}},
         "ul-CyclicPrefixLength": "len1"}


def _encode(rat: str, channel: str, value) -> bytes:
    o = _obj(rat, channel)
    o.set_val(value)
    return o.to_uper()


def _nested(levels: int, leaf: dict) -> dict:
    v = leaf
    for _ in range(levels):
        v = {"nonCriticalExtension": v}
    return v


def nr_cell_group(pci: int, ssb_arfcn: int, cell_group_id: int = 1) -> bytes:
    """A CellGroupConfig with a reconfigurationWithSync to (pci, SSB ARFCN)."""
    _, nr = _asn()
    common = {"physCellId": pci, "downlinkConfigCommon": {"frequencyInfoDL": {
        "absoluteFrequencySSB": ssb_arfcn, "frequencyBandList": [78], "absoluteFrequencyPointA": ssb_arfcn - 600,
        "scs-SpecificCarrierList": [{"offsetToCarrier": 0, "subcarrierSpacing": "kHz30", "carrierBandwidth": 273}]}},
        "dmrs-TypeA-Position": "pos2", "ss-PBCH-BlockPower": 0}
    nr.CellGroupConfig.set_val({"cellGroupId": cell_group_id, "spCellConfig": {
        "reconfigurationWithSync": {"spCellConfigCommon": common, "newUE-Identity": 17, "t304": "ms1000"}}})
    return nr.CellGroupConfig.to_uper()


def lte_reconfiguration(tid: int, *, target_pci: int | None = None, target_earfcn: int | None = None,
                        scg: tuple[int, int] | str | None = None) -> bytes:
    """LTE RRCConnectionReconfiguration (DL-DCCH): a handover to ``target_pci`` (on
    ``target_earfcn``; None: the same frequency), and/or an EN-DC SCG change: ``scg`` =
    (NR pci, SSB ARFCN) to add or change the secondary cell group, ``"release"`` to release it."""
    _, nr = _asn()
    r8: dict = {}
    if target_pci is not None:
        mci = {"targetPhysCellId": target_pci, "t304": "ms1000", "newUE-Identity": (0x1234, 16),
               "radioResourceConfigCommon": _RRCC}
        if target_earfcn is not None:
            mci["carrierFreq"] = {"dl-CarrierFreq": target_earfcn}
        r8["mobilityControlInfo"] = mci
    if scg is not None:
        if scg == "release":
            nrc = ("release", 0)
        else:
            nr.RRCReconfiguration.set_val({"rrc-TransactionIdentifier": tid % 4, "criticalExtensions": (
                "rrcReconfiguration", {"secondaryCellGroup": nr_cell_group(*scg)})})
            nrc = ("setup", {"endc-ReleaseAndAdd-r15": False,
                             "nr-SecondaryCellGroupConfig-r15": nr.RRCReconfiguration.to_uper()})
        # r8 -> v890 -> v920 -> v1020 -> v1130 -> v1250 -> v1310 -> v1430 -> v1510 (nr-Config-r15)
        r8.update(_nested(8, {"nr-Config-r15": nrc}))
    return _encode("LTE", "DL_DCCH", {"message": ("c1", ("rrcConnectionReconfiguration", {
        "rrc-TransactionIdentifier": tid, "criticalExtensions": ("c1", ("rrcConnectionReconfiguration-r8", r8))}))})


def lte_reconfiguration_complete(tid: int) -> bytes:
    return _encode("LTE", "UL_DCCH", {"message": ("c1", ("rrcConnectionReconfigurationComplete", {
        "rrc-TransactionIdentifier": tid, "criticalExtensions": ("rrcConnectionReconfigurationComplete-r8", {})}))})


def lte_measurement_report(meas_id: int = 1, rsrp: int = 50, rsrq: int = 20) -> bytes:
    """LTE MeasurementReport (UL-DCCH) of the serving cell's RSRP/RSRQ (3GPP report ranges)."""
    return _encode("LTE", "UL_DCCH", {"message": ("c1", ("measurementReport", {"criticalExtensions": (
        "c1", ("measurementReport-r8", {"measResults": {
            "measId": meas_id, "measResultPCell": {"rsrpResult": rsrp, "rsrqResult": rsrq}}}))}))})


def lte_reestablishment_request(failed_pci: int, cause: str = "handoverFailure") -> bytes:
    """LTE RRCConnectionReestablishmentRequest (UL-CCCH) after a failure in cell ``failed_pci``;
    cause: reconfigurationFailure, handoverFailure or otherFailure."""
    return _encode("LTE", "UL_CCCH", {"message": ("c1", ("rrcConnectionReestablishmentRequest", {
        "criticalExtensions": ("rrcConnectionReestablishmentRequest-r8", {
            "ue-Identity": {"c-RNTI": (0x1234, 16), "physCellId": failed_pci, "shortMAC-I": (0, 16)},
            "reestablishmentCause": cause, "spare": (0, 2)})}))})


def lte_reestablishment_complete(tid: int = 0) -> bytes:
    return _encode("LTE", "UL_DCCH", {"message": ("c1", ("rrcConnectionReestablishmentComplete", {
        "rrc-TransactionIdentifier": tid,
        "criticalExtensions": ("rrcConnectionReestablishmentComplete-r8", {})}))})


def lte_connection_release(tid: int = 0) -> bytes:
    return _encode("LTE", "DL_DCCH", {"message": ("c1", ("rrcConnectionRelease", {
        "rrc-TransactionIdentifier": tid, "criticalExtensions": ("c1", ("rrcConnectionRelease-r8", {
            "releaseCause": "other"}))}))})


def nr_reconfiguration(tid: int, pci: int, ssb_arfcn: int, *, master: bool = True) -> bytes:
    """NR RRCReconfiguration (DL-DCCH) with a reconfigurationWithSync to (pci, SSB ARFCN) in the
    master cell group (a 5G SA handover) or, ``master=False``, the secondary cell group."""
    cg = nr_cell_group(pci, ssb_arfcn, 0 if master else 1)
    body = ({"nonCriticalExtension": {"masterCellGroup": cg}} if master else {"secondaryCellGroup": cg})
    return _encode("NR", "DL_DCCH", {"message": ("c1", ("rrcReconfiguration", {
        "rrc-TransactionIdentifier": tid, "criticalExtensions": ("rrcReconfiguration", body)}))})


def nr_reconfiguration_complete(tid: int) -> bytes:
    return _encode("NR", "UL_DCCH", {"message": ("c1", ("rrcReconfigurationComplete", {
        "rrc-TransactionIdentifier": tid, "criticalExtensions": ("rrcReconfigurationComplete", {})}))})


def nr_measurement_report(meas_id: int = 1) -> bytes:
    return _encode("NR", "UL_DCCH", {"message": ("c1", ("measurementReport", {"criticalExtensions": (
        "measurementReport", {"measResults": {"measId": meas_id, "measResultServingMOList": [
            {"servCellId": 0, "measResultServingCell": {"physCellId": 1, "measResult": {
                "cellResults": {"resultsSSB-Cell": {"rsrp": 60}}}}}]}})}))})


def lte_mobility_from_eutra(tid: int, target_rat: str = "utra") -> bytes:
    """LTE MobilityFromEUTRACommand (DL-DCCH): a handover to another RAT (``utra``, ``geran``,
    ``nr`` …); the target's own command is an opaque container here."""
    return _encode("LTE", "DL_DCCH", {"message": ("c1", ("mobilityFromEUTRACommand", {
        "rrc-TransactionIdentifier": tid, "criticalExtensions": ("c1", ("mobilityFromEUTRACommand-r8", {
            "cs-FallbackIndicator": False, "purpose": ("handover", {
                "targetRAT-Type": target_rat, "targetRAT-MessageContainer": b"\x00"})}))}))})


def nr_reestablishment_request(failed_pci: int, cause: str = "otherFailure") -> bytes:
    """NR RRCReestablishmentRequest (UL-CCCH) after a failure in cell ``failed_pci``."""
    return _encode("NR", "UL_CCCH", {"message": ("c1", ("rrcReestablishmentRequest", {
        "rrcReestablishmentRequest": {"ue-Identity": {"c-RNTI": 0x1234, "physCellId": failed_pci,
                                                      "shortMAC-I": (0, 16)},
                                      "reestablishmentCause": cause, "spare": (0, 1)}}))})


def nr_reestablishment_complete(tid: int = 0) -> bytes:
    return _encode("NR", "UL_DCCH", {"message": ("c1", ("rrcReestablishmentComplete", {
        "rrc-TransactionIdentifier": tid, "criticalExtensions": ("rrcReestablishmentComplete", {})}))})
