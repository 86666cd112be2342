//! Builders for capture files written in the tests themselves (pcap, pcapng, gzip), so
//! each test states exactly the bytes it reads.
#![allow(dead_code)]

use std::io::{Read, Write};

use hsrtcp_core::capture::{CaptureError, CaptureReader, LinkType};

/// One pcap record.
#[derive(Clone, Debug)]
pub struct Rec {
    pub sec: u32,
    pub frac: u32,
    pub data: Vec<u8>,
    pub orig: u32,
}

fn put32(out: &mut Vec<u8>, v: u32, be: bool) {
    out.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}
fn put16(out: &mut Vec<u8>, v: u16, be: bool) {
    out.extend_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
}

/// A classic pcap file. `magic` is 0xa1b2c3d4 (µs), 0xa1b23c4d (ns) or 0xa1b2cd34 (modified).
pub fn pcap_with_magic(magic: u32, be: bool, linktype: u32, snaplen: u32, recs: &[Rec]) -> Vec<u8> {
    let mut out = Vec::new();
    put32(&mut out, magic, be);
    put16(&mut out, 2, be);
    put16(&mut out, 4, be);
    put32(&mut out, 0, be); // thiszone
    put32(&mut out, 0, be); // sigfigs
    put32(&mut out, snaplen, be);
    put32(&mut out, linktype, be);
    for r in recs {
        put32(&mut out, r.sec, be);
        put32(&mut out, r.frac, be);
        put32(&mut out, r.data.len() as u32, be);
        put32(&mut out, r.orig, be);
        if magic == 0xa1b2_cd34 {
            out.extend_from_slice(&[0; 8]); // ifindex, protocol, pkt_type, pad
        }
        out.extend_from_slice(&r.data);
    }
    out
}

pub fn pcap(be: bool, nanos: bool, linktype: u32, recs: &[Rec]) -> Vec<u8> {
    pcap_with_magic(
        if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 },
        be,
        linktype,
        65535,
        recs,
    )
}

/// A pcapng block.
#[derive(Clone, Debug)]
pub enum Ng {
    Shb,
    Idb {
        linktype: u16,
        snaplen: u32,
        tsresol: Option<u8>,
        tsoffset: Option<i64>,
    },
    Epb {
        iface: u32,
        units: u64,
        data: Vec<u8>,
        orig: u32,
    },
    Spb {
        data: Vec<u8>,
        orig: u32,
    },
    /// Any other block type (statistics, name resolution, custom …) with an opaque body.
    Other {
        btype: u32,
        body: Vec<u8>,
    },
}

fn block(out: &mut Vec<u8>, btype: u32, body: &[u8], be: bool) {
    let len = 12 + body.len().div_ceil(4) * 4;
    put32(out, btype, be);
    put32(out, len as u32, be);
    out.extend_from_slice(body);
    out.resize(out.len() + (len - 12 - body.len()), 0);
    put32(out, len as u32, be);
}

fn option(body: &mut Vec<u8>, code: u16, value: &[u8], be: bool) {
    put16(body, code, be);
    put16(body, value.len() as u16, be);
    body.extend_from_slice(value);
    body.resize(body.len().div_ceil(4) * 4, 0);
}

pub fn pcapng(be: bool, blocks: &[Ng]) -> Vec<u8> {
    let mut out = Vec::new();
    for b in blocks {
        let mut body = Vec::new();
        match b {
            Ng::Shb => {
                put32(&mut body, 0x1a2b_3c4d, be);
                put16(&mut body, 1, be);
                put16(&mut body, 0, be);
                body.extend_from_slice(&[0xff; 8]); // section length unknown
                block(&mut out, 0x0a0d_0d0a, &body, be);
            }
            Ng::Idb {
                linktype,
                snaplen,
                tsresol,
                tsoffset,
            } => {
                put16(&mut body, *linktype, be);
                put16(&mut body, 0, be);
                put32(&mut body, *snaplen, be);
                option(&mut body, 2, b"eth0", be); // if_name
                if let Some(r) = tsresol {
                    option(&mut body, 9, &[*r], be);
                }
                if let Some(o) = tsoffset {
                    option(
                        &mut body,
                        14,
                        &if be { o.to_be_bytes() } else { o.to_le_bytes() },
                        be,
                    );
                }
                put32(&mut body, 0, be); // opt_endofopt
                block(&mut out, 1, &body, be);
            }
            Ng::Epb {
                iface,
                units,
                data,
                orig,
            } => {
                put32(&mut body, *iface, be);
                put32(&mut body, (units >> 32) as u32, be);
                put32(&mut body, *units as u32, be);
                put32(&mut body, data.len() as u32, be);
                put32(&mut body, *orig, be);
                body.extend_from_slice(data);
                body.resize(body.len().div_ceil(4) * 4, 0);
                block(&mut out, 6, &body, be);
            }
            Ng::Spb { data, orig } => {
                put32(&mut body, *orig, be);
                body.extend_from_slice(data);
                block(&mut out, 3, &body, be);
            }
            Ng::Other { btype, body } => block(&mut out, *btype, body, be),
        }
    }
    out
}

pub fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// Records 0..n, record i at second i: an [`eth_tcp`] frame of `payload(i)` bytes, captured
/// whole or, when `orig` is more than the frame, cut from an `orig`-byte packet.
pub fn eth_tcp_records(n: u32, payload: impl Fn(u32) -> usize, orig: u32) -> Vec<Rec> {
    (0..n).map(|i| Rec { sec: i, frac: 0, data: eth_tcp(i, payload(i)), orig }).collect()
}

/// An Ethernet/IPv4/TCP frame with `payload` bytes of data, seq = 1000 + i.
pub fn eth_tcp(i: u32, payload: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    let total = (20 + 20 + payload) as u16;
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0x40,
        0,
        64,
        6,
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ]);
    f.extend_from_slice(&[0x9c, 0x40, 0, 80]);
    f.extend_from_slice(&(1000 + i).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0, 0x50, 0x18, 1, 0, 0, 0, 0, 0]);
    f.extend((0..payload).map(|k| k as u8));
    f
}

/// What a test wants to know about each frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Got {
    pub ts: i64,
    pub linktype: LinkType,
    pub data: Vec<u8>,
    pub orig_len: u32,
    pub offset: u64,
    pub iface: u32,
}

/// Read everything; the error (if any) is returned with the frames before it. Also checks
/// that the reader stays finished after the end or an error.
pub fn read_all_from(r: Box<dyn Read + Send>, name: &str) -> (Vec<Got>, Option<CaptureError>) {
    let mut rd = match CaptureReader::from_reader(r, name.to_string()) {
        Ok(r) => r,
        Err(e) => return (vec![], Some(e)),
    };
    let mut out = Vec::new();
    let err = loop {
        match rd.next_frame() {
            Ok(Some(f)) => out.push(Got {
                ts: f.ts,
                linktype: f.linktype,
                data: f.data.to_vec(),
                orig_len: f.orig_len,
                offset: f.offset,
                iface: f.iface,
            }),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    for _ in 0..3 {
        assert!(
            matches!(rd.next_frame(), Ok(None)),
            "reader must stay finished"
        );
    }
    (out, err)
}

pub fn read_all(bytes: &[u8], name: &str) -> (Vec<Got>, Option<CaptureError>) {
    read_all_from(Box::new(std::io::Cursor::new(bytes.to_vec())), name)
}

/// A reader that returns at most `chunk` bytes per call, varying, to exercise refills.
pub struct Dribble {
    pub data: Vec<u8>,
    pub pos: usize,
    pub chunk: usize,
}

impl Read for Dribble {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self
            .chunk
            .min(buf.len())
            .min(self.data.len() - self.pos)
            .min(1 + (self.pos * 7919) % self.chunk);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// The TCP fields the tests compare with tshark (an independent decoder), in the order of a
/// line of [`tshark_rows`] and [`tshark_line`].
const TSHARK_FIELDS: [&str; 11] = [
    "tcp.srcport",
    "tcp.dstport",
    "tcp.seq_raw",
    "tcp.ack_raw",
    "tcp.len",
    "tcp.window_size_value",
    "tcp.options.mss_val",
    "tcp.options.wscale.shift",
    "tcp.options.timestamp.tsval",
    "tcp.options.sack_le",
    "tcp.options.sack_re",
];

/// tshark's reading of a capture, a line a packet: [`TSHARK_FIELDS`], '|'-separated,
/// absolute sequence numbers, a field's repeated values (SACK edges) ','-separated.
pub fn tshark_rows(path: &std::path::Path) -> Vec<String> {
    let mut cmd = std::process::Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(path);
    cmd.args(["-o", "tcp.relative_sequence_numbers:FALSE", "-o", "tcp.analyze_sequence_numbers:FALSE"]);
    cmd.args(["-T", "fields", "-E", "separator=|", "-E", "aggregator=,"]);
    for f in TSHARK_FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

/// Our decoding of a frame as a line of [`tshark_rows`] (a frame that is not TCP: every
/// field empty, as tshark shows it).
pub fn tshark_line(d: &hsrtcp_core::wire::Decoded) -> String {
    let hsrtcp_core::wire::Decoded::Tcp(s) = d else {
        return "|".repeat(TSHARK_FIELDS.len() - 1);
    };
    let o = &s.options;
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let (le, re): (Vec<String>, Vec<String>) =
        o.sack_blocks().iter().map(|b| (b.left.to_string(), b.right.to_string())).unzip();
    format!(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
        s.sport,
        s.dport,
        s.seq,
        s.ack,
        s.payload_len,
        s.window,
        opt(o.mss.map(u64::from)),
        opt(o.wscale.map(u64::from)),
        opt(o.timestamp.map(|t| t.0 as u64)),
        le.join(","),
        re.join(",")
    )
}
