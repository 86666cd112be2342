//! Witness: tshark (an independent decoder) reads the same capture and must agree with ours
//! on every TCP field we extract. The capture holds 3000 random TCP packets over eight link
//! types, IPv4 (with options, padding) and IPv6 (with extension headers), random option
//! sets (MSS, WS, SACK-permitted, SACK 1–4 blocks, timestamps, MPTCP, unknown kinds, NOPs),
//! random payload sizes and snaplens that cut the payload.
//!
//! Skips (with a message) when tshark is not installed.

mod common;

use std::process::Command;

use common::*;
use hsrtcp_core::capture::CaptureReader;
use hsrtcp_core::wire::{decode, Decoded};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

/// Random TCP header (with options) + payload length.
fn random_tcp(rng: &mut Rng) -> (Vec<u8>, usize) {
    let mut opts: Vec<u8> = Vec::new();
    let add = |o: &[u8], opts: &mut Vec<u8>| {
        if opts.len() + o.len() <= 40 {
            opts.extend_from_slice(o);
        }
    };
    let syn = rng.below(5) == 0;
    if syn {
        add(&[2, 4, 0x05, (rng.below(256)) as u8], &mut opts);
        if rng.coin() {
            add(&[4, 2], &mut opts);
        }
        if rng.coin() {
            add(&[1, 3, 3, rng.below(15) as u8], &mut opts);
        }
    }
    if rng.below(4) != 0 {
        let mut t = vec![1, 1, 8, 10];
        t.extend_from_slice(&(rng.next() as u32).to_be_bytes());
        t.extend_from_slice(&(rng.next() as u32).to_be_bytes());
        add(&t, &mut opts);
    }
    if !syn && rng.below(3) == 0 {
        let room = (40 - opts.len()).saturating_sub(2) / 8;
        let n = (1 + rng.below(4) as usize).min(room);
        if n > 0 {
            let mut s = vec![5, (2 + 8 * n) as u8];
            for _ in 0..n {
                let l = rng.next() as u32;
                s.extend_from_slice(&l.to_be_bytes());
                s.extend_from_slice(&l.wrapping_add(1 + rng.below(100_000) as u32).to_be_bytes());
            }
            add(&s, &mut opts);
        }
    }
    if rng.below(6) == 0 {
        // MPTCP DSS with a 4-byte data ACK (subtype 2, flag A).
        let mut m = vec![30, 8, 0x20, 0x01];
        m.extend_from_slice(&(rng.next() as u32).to_be_bytes());
        add(&m, &mut opts);
    }
    if rng.below(8) == 0 {
        add(&[253, 4, 0xab, 0xcd], &mut opts); // RFC 6994 experimental: skipped by length
    }
    while !opts.len().is_multiple_of(4) {
        opts.push(1);
    }
    let mut h = Vec::new();
    h.extend_from_slice(&(1024 + rng.below(60000) as u16).to_be_bytes());
    h.extend_from_slice(&(1024 + rng.below(60000) as u16).to_be_bytes());
    h.extend_from_slice(&(rng.next() as u32).to_be_bytes());
    h.extend_from_slice(&(rng.next() as u32).to_be_bytes());
    let flags: u16 = if syn {
        0x002 | if rng.coin() { 0x010 } else { 0 }
    } else {
        0x010 | (rng.below(0x200) as u16 & 0x1e9)
    };
    h.extend_from_slice(&((((20 + opts.len()) / 4) as u16) << 12 | flags).to_be_bytes());
    h.extend_from_slice(&(rng.next() as u16).to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 0]);
    h.extend_from_slice(&opts);
    let payload = if syn || rng.below(3) == 0 {
        0
    } else {
        1 + rng.below(1460) as usize
    };
    (h, payload)
}

fn ipv4(rng: &mut Rng, l4: &[u8], payload: usize) -> Vec<u8> {
    let opt = rng.below(4) == 0;
    let ihl = if opt { 6 } else { 5 };
    let total = (ihl * 4 + l4.len() + payload) as u16;
    let mut p = vec![0x40 | ihl as u8, 0];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&(rng.next() as u16).to_be_bytes());
    p.extend_from_slice(&[
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
        rng.below(256) as u8,
        2,
    ]);
    if opt {
        p.extend_from_slice(&[1, 1, 1, 0]);
    }
    p.extend_from_slice(l4);
    p.extend((0..payload).map(|k| k as u8));
    p
}

fn ipv6(rng: &mut Rng, l4: &[u8], payload: usize) -> Vec<u8> {
    let ext = rng.below(3) == 0;
    let plen = (if ext { 16 } else { 0 } + l4.len() + payload) as u16;
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&plen.to_be_bytes());
    p.push(if ext { 0 } else { 6 });
    p.push(64);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.extend_from_slice(&[
        0x20,
        0x01,
        0x0d,
        0xb8,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        rng.below(256) as u8,
    ]);
    if ext {
        p.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop, PadN
        p.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]); // destination options, PadN
    }
    p.extend_from_slice(l4);
    p.extend((0..payload).map(|k| k as u8));
    p
}

/// (interface, frame, payload length) for one random packet.
fn random_frame(rng: &mut Rng) -> (u32, Vec<u8>, usize) {
    let (l4, payload) = random_tcp(rng);
    let v6 = rng.coin();
    let ip = if v6 {
        ipv6(rng, &l4, payload)
    } else {
        ipv4(rng, &l4, payload)
    };
    let et: &[u8] = if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] };
    let iface = rng.below(8) as u32;
    let mut f = Vec::new();
    match iface {
        0 => {
            f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
            f.extend_from_slice(et);
        }
        1 => {
            f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0, 0, 100]);
            f.extend_from_slice(et);
        }
        2 => {
            f.extend_from_slice(&[0, 4, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
            f.extend_from_slice(et);
        }
        3 => {
            f.extend_from_slice(et);
            f.extend_from_slice(&[0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
        }
        4 => {}                                                                // raw IP
        5 => f.extend_from_slice(&(if v6 { 24u32 } else { 2 }).to_le_bytes()), // NULL, LE writer
        6 => f.extend_from_slice(&(if v6 { 24u32 } else { 2 }).to_be_bytes()), // LOOP
        _ => f.extend_from_slice(&[0x00, if v6 { 0x57 } else { 0x21 }]),       // PPP without ff 03
    }
    f.extend_from_slice(&ip);
    (iface, f, payload)
}

const IFACES: [u16; 8] = [1, 1, 113, 276, 101, 0, 108, 9];
const FIELDS: [&str; 14] = [
    "tcp.srcport",
    "tcp.dstport",
    "tcp.seq_raw",
    "tcp.ack_raw",
    "tcp.flags",
    "tcp.window_size_value",
    "tcp.len",
    "tcp.options.mss_val",
    "tcp.options.wscale.shift",
    "tcp.options.timestamp.tsval",
    "tcp.options.timestamp.tsecr",
    "tcp.options.sack_le",
    "tcp.options.sack_re",
    "tcp.options.mptcp.subtype",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

#[test]
fn tshark_agrees_on_every_tcp_field() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("SKIPPED: tshark is not installed (apt-get install tshark)");
        return;
    }
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let mut blocks = vec![Ng::Shb];
    for lt in IFACES {
        blocks.push(Ng::Idb {
            linktype: lt,
            snaplen: 0,
            tsresol: None,
            tsoffset: None,
        });
    }
    for i in 0..3000u64 {
        let (iface, mut f, payload) = random_frame(&mut rng);
        let orig = f.len() as u32;
        if payload > 0 && rng.below(3) == 0 {
            // Cut by a snaplen inside the payload (all headers and options kept).
            let cut = 1 + rng.below(payload as u64) as usize;
            f.truncate(f.len() - cut);
        }
        blocks.push(Ng::Epb {
            iface,
            units: 1_700_000_000_000_000 + i,
            data: f,
            orig,
        });
    }
    let dir = std::env::temp_dir().join(format!("hsrtcp-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("random.pcapng");
    std::fs::write(&path, pcapng(false, &blocks)).unwrap();

    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(&path);
    for o in [
        "tcp.relative_sequence_numbers:FALSE",
        "tcp.analyze_sequence_numbers:FALSE",
        "tcp.desegment_tcp_streams:FALSE",
        "tcp.check_checksum:FALSE",
    ] {
        cmd.args(["-o", o]);
    }
    cmd.args(["-T", "fields", "-E", "separator=|", "-E", "aggregator=,"]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();

    let mut rd = CaptureReader::open(&path).unwrap();
    let mut n = 0;
    let mut checked_opts = [0usize; 5];
    while let Some(f) = rd.next_frame().unwrap() {
        let Decoded::Tcp(s) = decode(&f) else {
            panic!("frame {} not decoded as TCP: {:?}", n + 1, decode(&f))
        };
        let o = &s.options;
        let (le, re): (Vec<String>, Vec<String>) = o
            .sack_blocks()
            .iter()
            .map(|b| (b.left.to_string(), b.right.to_string()))
            .unzip();
        let ours = [
            s.sport.to_string(),
            s.dport.to_string(),
            s.seq.to_string(),
            s.ack.to_string(),
            format!("0x{:04x}", s.flags.0),
            s.window.to_string(),
            s.payload_len.to_string(),
            opt(o.mss),
            opt(o.wscale),
            opt(o.timestamp.map(|t| t.0)),
            opt(o.timestamp.map(|t| t.1)),
            le.join(","),
            re.join(","),
            opt(o.mptcp.map(|m| m.subtype)),
        ]
        .join("|");
        assert_eq!(ours, rows[n], "frame {} (fields {:?})", n + 1, FIELDS);
        checked_opts[0] += o.mss.is_some() as usize;
        checked_opts[1] += o.timestamp.is_some() as usize;
        checked_opts[2] += (o.sack_count > 0) as usize;
        checked_opts[3] += o.mptcp.is_some() as usize;
        checked_opts[4] += s.payload_truncated as usize;
        n += 1;
    }
    assert_eq!(n, 3000);
    assert_eq!(rows.len(), 3000);
    // The random mix really covered each kind of option and truncation.
    assert!(checked_opts.iter().all(|&c| c > 100), "{checked_opts:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
