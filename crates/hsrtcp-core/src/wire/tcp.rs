//! The TCP header and its options (RFC 9293 §3.1, RFC 7323, RFC 2018, RFC 8684).

use std::mem::MaybeUninit;

use super::bytes::{be16, be32};
use super::ip::IpInfo;
use super::{MalformedReason, MptcpOption, Nanos, SackBlock, Segment, Stop, TcpFlags, TcpOptions};

/// Decode the TCP header at the start of `t` (the captured bytes from the TCP header on)
/// into `out`, which is written exactly when the result is `Ok`. Writing in place spares
/// the reader a copy of every segment (it decodes straight into its batch).
// (always: see ip::locate)
#[inline(always)]
pub(super) fn decode_into(t: &[u8], ip: IpInfo<'_>, ts: Nanos, out: &mut MaybeUninit<Segment>) -> Result<(), Stop> {
    if t.len() < 20 {
        return Err(Stop::Malformed(MalformedReason::ShortTcpHeader));
    }
    if ip.l4_len < 20 {
        return Err(Stop::Malformed(MalformedReason::IpTotalLenTooSmall));
    }
    let doff = (t[12] >> 4) as usize * 4;
    if doff < 20 || doff > ip.l4_len {
        return Err(Stop::Malformed(MalformedReason::BadTcpDataOffset));
    }
    let captured_hdr = doff.min(t.len());
    let seg = out.write(Segment {
        ts,
        src: ip.src(),
        dst: ip.dst(),
        sport: be16(t, 0),
        dport: be16(t, 2),
        seq: be32(t, 4),
        ack: be32(t, 8),
        // Nine flag bits: NS (now AccECN's AE) and the eight of byte 13.
        flags: TcpFlags(be16(t, 12) & 0x01ff),
        window: be16(t, 14),
        payload_len: (ip.l4_len - doff) as u32,
        ip_id: ip.ip_id,
        options: TcpOptions::default(),
        // Trailing link padding makes `t` longer, never shorter, than the segment.
        payload_truncated: t.len() < ip.l4_len,
        outer: 0,
        frame: 0,
    });
    // The options are parsed into the written segment, not into a stack copy moved there
    // afterwards (see IpInfo: the same stall).
    parse_options_into(&t[20..captured_hdr], &mut seg.options);
    if captured_hdr < doff {
        seg.options.truncated = true;
    }
    Ok(())
}

/// Decode TCP options (the bytes after the 20 fixed header bytes, up to the data offset or
/// the end of the capture, whichever is first).
///
/// Known options with the wrong length are skipped like unknown ones; an option whose
/// length byte is missing, below 2 or beyond the end stops decoding with `truncated` set.
// (always: inlined in the tunnel decoder's copy of decode_into as in the hot path's)
#[inline(always)]
pub fn parse_options(o: &[u8]) -> TcpOptions {
    let mut r = TcpOptions::default();
    parse_options_into(o, &mut r);
    r
}

/// [`parse_options`] into `r`, which holds the default (no option).
#[inline(always)]
fn parse_options_into(o: &[u8], r: &mut TcpOptions) {
    // Fast paths, inline in the decoder: no options, and the layout of nearly every
    // segment of a timestamped connection, NOP NOP TS (RFC 7323 Appendix A).
    if o.is_empty() {
        return;
    }
    if o.len() == 12 && o[..4] == [1, 1, 8, 10] {
        r.timestamp = Some((be32(o, 4), be32(o, 8)));
        return;
    }
    *r = parse_any_options(o);
}

/// [`parse_options`] for any other layout.
fn parse_any_options(o: &[u8]) -> TcpOptions {
    let mut r = TcpOptions::default();
    let mut i = 0;
    while i < o.len() {
        let kind = o[i];
        match kind {
            0 => break, // end of option list
            1 => {
                i += 1; // no-operation (padding)
                continue;
            }
            _ => {}
        }
        let Some(&len) = o.get(i + 1) else {
            r.truncated = true;
            break;
        };
        let len = len as usize;
        if len < 2 || i + len > o.len() {
            r.truncated = true;
            break;
        }
        let v = &o[i + 2..i + len];
        match (kind, len) {
            (2, 4) => r.mss = Some(be16(v, 0)),
            (3, 3) => r.wscale = Some(v[0]),
            (4, 2) => r.sack_permitted = true,
            (5, _) if len >= 10 => {
                // (len − 2) / 8 blocks; at most 4 fit in 40 bytes of options.
                let n = ((len - 2) / 8).min(4);
                for k in 0..n {
                    r.sack[k] = SackBlock {
                        left: be32(v, 8 * k),
                        right: be32(v, 8 * k + 4),
                    };
                }
                r.sack_count = n as u8;
            }
            (8, 10) => r.timestamp = Some((be32(v, 0), be32(v, 4))),
            (30, _) if len >= 3 => {
                r.mptcp_count = r.mptcp_count.saturating_add(1);
                if r.mptcp.is_none() {
                    let mut m = MptcpOption {
                        subtype: v[0] >> 4,
                        len: len as u8,
                        flags: v[0] & 0x0f,
                        raw: [0; 32],
                    };
                    let body = &v[1..];
                    let n = body.len().min(32);
                    m.raw[..n].copy_from_slice(&body[..n]);
                    r.mptcp = Some(m);
                } else {
                    more_mptcp(&mut r, v, len as u8);
                }
            }
            _ => {} // unknown (TFO cookie, MD5, AO, experiments …) or odd length: skip
        }
        i += len;
    }
    r
}

/// Note an MPTCP option after the segment's first (rare: kept as a subtype bit, see
/// [`TcpOptions::mptcp_more`]). `v`: the option's bytes after kind and length.
#[cold]
fn more_mptcp(r: &mut TcpOptions, v: &[u8], len: u8) {
    let (subtype, flags) = (v[0] >> 4, v[0] & 0x0f);
    let dss_flags = v.get(1).copied().unwrap_or(0);
    if subtype == 15 {
        return; // MP_EXPERIMENTAL: nothing to count
    }
    if !super::mptcp::length_ok(subtype, flags, len, dss_flags) {
        r.mptcp_more |= 1 << 15;
        return;
    }
    r.mptcp_more |= 1 << subtype;
    if subtype == super::mptcp::MP_PRIO {
        r.mptcp_more_backup = flags & 1 != 0;
    }
}
