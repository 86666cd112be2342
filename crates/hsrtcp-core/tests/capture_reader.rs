//! The capture reader on pcap/pcapng/gzip files built byte by byte in the tests, including
//! every kind of damage: the frames before the damage are returned, then one error naming
//! the file and the byte offset, then nothing.

mod common;

use common::*;
use hsrtcp_core::capture::{CaptureFormat, CaptureReader, LinkType, MAX_CAPLEN};
use hsrtcp_core::wire::{decode, Decoded, MalformedReason};

fn recs(n: u32) -> Vec<Rec> {
    (0..n)
        .map(|i| Rec {
            sec: 1_700_000_000 + i,
            frac: 123_456 + i,
            data: eth_tcp(i, i as usize * 10),
            orig: 54 + i * 10,
        })
        .collect()
}

/// An interface description block with no snap length.
fn idb(linktype: u16, tsresol: Option<u8>, tsoffset: Option<i64>) -> Ng {
    Ng::Idb { linktype, snaplen: 0, tsresol, tsoffset }
}

/// An enhanced packet block on interface 0, captured whole.
fn epb(units: u64, data: Vec<u8>) -> Ng {
    let orig = data.len() as u32;
    Ng::Epb { iface: 0, units, data, orig }
}

/// A little-endian pcapng of one Ethernet packet at 1 µs: the base the damage tests corrupt.
fn one_packet_pcapng() -> Vec<u8> {
    pcapng(false, &[Ng::Shb, idb(1, None, None), epb(1, eth_tcp(0, 0))])
}

#[test]
fn pcap_both_resolutions_and_byte_orders() {
    for be in [false, true] {
        for nanos in [false, true] {
            let rs = recs(5);
            let file = pcap(be, nanos, 1, &rs);
            let mut rd = CaptureReader::from_reader(
                Box::new(std::io::Cursor::new(file.clone())),
                "t.pcap".into(),
            )
            .unwrap();
            assert_eq!(
                rd.format(),
                CaptureFormat::Pcap {
                    nanosecond: nanos,
                    big_endian: be,
                    modified: false
                }
            );
            let mut offset = 24u64;
            for (i, r) in rs.iter().enumerate() {
                let f = rd.next_frame().unwrap().unwrap();
                let frac_ns = if nanos {
                    r.frac as i64
                } else {
                    r.frac as i64 * 1000
                };
                assert_eq!(
                    f.ts,
                    r.sec as i64 * 1_000_000_000 + frac_ns,
                    "be={be} ns={nanos} #{i}"
                );
                assert_eq!(
                    (f.linktype, f.data, f.orig_len, f.offset),
                    (LinkType::ETHERNET, &r.data[..], r.orig, offset)
                );
                offset += 16 + r.data.len() as u64;
                let Decoded::Tcp(s) = decode(&f) else {
                    panic!("not tcp")
                };
                assert_eq!((s.seq, s.payload_len), (1000 + i as u32, i as u32 * 10));
            }
            assert!(rd.next_frame().unwrap().is_none());
            assert_eq!(rd.bytes_read(), file.len() as u64);
        }
    }
}

#[test]
fn pcap_modified_format_and_fcs_bits_in_linktype() {
    let rs = recs(3);
    // Link type field with the FCS bits of the pcap spec set: F (bit 28) and FCS length 1
    // (bits 26-27); only the low 16 bits are the link type.
    let file = pcap_with_magic(0xa1b2_cd34, false, 0x1400_0001, 65535, &rs);
    let (got, err) = read_all(&file, "m.pcap");
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got.len(), 3);
    assert_eq!(got[2].data, rs[2].data);
    assert_eq!(got[1].offset, 24 + 24 + rs[0].data.len() as u64);
    assert_eq!(got[0].linktype, LinkType::ETHERNET);
}

#[test]
fn pcapng_interfaces_with_own_linktype_resolution_and_offset() {
    for be in [false, true] {
        let raw = eth_tcp(9, 0)[14..].to_vec();
        let blocks = vec![
            Ng::Shb,
            // 0: Ethernet, default resolution (µs).
            Ng::Idb {
                linktype: 1,
                snaplen: 262144,
                tsresol: None,
                tsoffset: None,
            },
            // 1: raw IP, nanoseconds, offset +1000 s.
            idb(101, Some(9), Some(1000)),
            // 2: SLL2, 2^-20 s units.
            Ng::Idb {
                linktype: 276,
                snaplen: 128,
                tsresol: Some(0x80 | 20),
                tsoffset: None,
            },
            epb(1_700_000_000_123_456, eth_tcp(0, 100)),
            // Name resolution and interface statistics blocks are skipped.
            Ng::Other {
                btype: 4,
                body: vec![0; 12],
            },
            Ng::Epb {
                iface: 1,
                units: 1_700_000_000_000_000_001,
                data: raw.clone(),
                orig: 40,
            },
            Ng::Other {
                btype: 5,
                body: vec![0; 20],
            },
            // (near the others' time: a clock more than a day back stops reading)
            Ng::Epb {
                iface: 2,
                units: 1_700_001_000 << 20 | 1 << 19,
                data: vec![0; 20],
                orig: 20,
            },
            // Simple packet block: interface 0, no timestamp of its own.
            Ng::Spb {
                data: eth_tcp(1, 0),
                orig: 54,
            },
        ];
        let file = pcapng(be, &blocks);
        let (got, err) = read_all(&file, "t.pcapng");
        assert!(err.is_none(), "{err:?}");
        assert_eq!(got.len(), 4);
        assert_eq!(
            (got[0].ts, got[0].linktype, got[0].iface),
            (1_700_000_000_123_456_000, LinkType::ETHERNET, 0)
        );
        assert_eq!(got[0].data, eth_tcp(0, 100));
        assert_eq!(
            (got[1].ts, got[1].linktype, got[1].iface),
            (1_700_001_000_000_000_001, LinkType::RAW, 1)
        );
        assert_eq!(got[1].data, raw);
        // 1,700,001,000.5 s in 2^-20 units.
        assert_eq!(
            (got[2].ts, got[2].linktype, got[2].iface),
            (1_700_001_000_500_000_000, LinkType::LINUX_SLL2, 2)
        );
        assert_eq!(
            (got[3].ts, got[3].iface, got[3].orig_len),
            (1_700_001_000_500_000_000, 0, 54)
        );
        assert_eq!(got[3].data, eth_tcp(1, 0));
        // Offsets point at the block starts.
        assert_eq!(
            &file[got[0].offset as usize..got[0].offset as usize + 4],
            if be { &[0, 0, 0, 6] } else { &[6, 0, 0, 0] }
        );
        assert_eq!(
            &file[got[3].offset as usize..got[3].offset as usize + 4],
            if be { &[0, 0, 0, 3] } else { &[3, 0, 0, 0] }
        );
    }
}

#[test]
fn pcapng_second_section_changes_byte_order_and_resets_interfaces() {
    let mut file = pcapng(
        false,
        &[
            Ng::Shb,
            idb(1, None, None),
            epb(5, eth_tcp(0, 0)),
        ],
    );
    file.extend(pcapng(
        true,
        &[
            Ng::Shb,
            idb(113, Some(3), None),
            epb(7, vec![1; 16]),
        ],
    ));
    let (got, err) = read_all(&file, "two.pcapng");
    assert!(err.is_none(), "{err:?}");
    assert_eq!((got[0].ts, got[0].linktype), (5_000, LinkType::ETHERNET));
    assert_eq!(
        (got[1].ts, got[1].linktype),
        (7_000_000, LinkType::LINUX_SLL)
    );
    // An EPB in a new section cannot use the old section's interfaces.
    let mut bad = pcapng(
        false,
        &[
            Ng::Shb,
            idb(1, None, None),
        ],
    );
    let second = pcapng(
        false,
        &[
            Ng::Shb,
            epb(1, vec![0; 4]),
        ],
    );
    let epb_at = bad.len() + 28;
    bad.extend(second);
    let (got, err) = read_all(&bad, "bad.pcapng");
    assert!(got.is_empty());
    let e = err.unwrap();
    assert_eq!((e.kind(), e.offset()), ("malformed", epb_at as u64));
    assert!(
        e.to_string().contains("interface 0 but the section has 0"),
        "{e}"
    );
}

#[test]
fn gzip_pcap_and_pcapng_are_detected_by_magic() {
    let rs = recs(50);
    let plain = pcap(false, false, 1, &rs);
    let gz = gzip(&plain);
    let mut rd = CaptureReader::from_reader(
        Box::new(std::io::Cursor::new(gz.clone())),
        "capture.bin".into(),
    )
    .unwrap();
    assert!(rd.is_gzip());
    let mut n = 0;
    while let Some(f) = rd.next_frame().unwrap() {
        assert_eq!(f.data, &rs[n].data[..]);
        n += 1;
    }
    assert_eq!(n, 50);
    // Progress counts compressed bytes: all of them at the end.
    assert_eq!(rd.bytes_read(), gz.len() as u64);

    let ng = pcapng(
        true,
        &[
            Ng::Shb,
            idb(1, Some(9), None),
            epb(42, eth_tcp(0, 3)),
        ],
    );
    let (got, err) = read_all(&gzip(&ng), "x.pcapng.gz");
    assert!(err.is_none());
    assert_eq!((got.len(), got[0].ts), (1, 42));

    // Two concatenated gzip members (what `cat a.gz b.gz` gives) read as one stream.
    let split = 24 + 16 + rs[0].data.len() + 16 + rs[1].data.len();
    let two = [gzip(&plain[..split]), gzip(&plain[split..])].concat();
    let (got, err) = read_all(&two, "cat.pcap.gz");
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got.len(), 50);
}

#[test]
fn many_records_through_small_irregular_reads() {
    // 40 000 records (≈ 4 MB, several buffer refills) delivered by a reader returning at
    // most 777 bytes per call: records straddle every refill boundary.
    let rs = eth_tcp_records(40_000, |i| (i % 97) as usize, 1514);
    let file = pcap(false, true, 1, &rs);
    for gz in [false, true] {
        let bytes = if gz { gzip(&file) } else { file.clone() };
        let (got, err) = read_all_from(
            Box::new(Dribble {
                data: bytes,
                pos: 0,
                chunk: 777,
            }),
            "big.pcap",
        );
        assert!(err.is_none(), "{err:?}");
        assert_eq!(got.len(), rs.len());
        for (g, r) in got.iter().zip(&rs) {
            assert_eq!((g.ts, &g.data), (r.sec as i64 * 1_000_000_000, &r.data));
        }
    }
}

#[test]
fn huge_records_and_blocks_within_bounds() {
    // A 200 KiB record (GRO giant captured whole) is accepted. (Its time is next to the
    // second record's: 54 years apart, the two would be a time jump, time_jump.rs.)
    let big = Rec {
        sec: 1_699_999_999,
        frac: 0,
        data: vec![7; 200 * 1024],
        orig: 200 * 1024,
    };
    let (got, err) = read_all(
        &pcap(false, false, 1, &[big.clone(), recs(1)[0].clone()]),
        "g.pcap",
    );
    assert!(err.is_none(), "{err:?}");
    assert_eq!(got[0].data.len(), 200 * 1024);
    assert_eq!(got.len(), 2);
    // A 3 MiB custom block (larger than the 1 MiB buffer) is skipped without buffering it.
    let file = pcapng(
        false,
        &[
            Ng::Shb,
            idb(1, None, None),
            Ng::Other {
                btype: 0x0000_0bad,
                body: vec![0x55; 3 << 20],
            },
            epb(9, eth_tcp(0, 0)),
        ],
    );
    let (got, err) = read_all_from(
        Box::new(Dribble {
            data: file,
            pos: 0,
            chunk: 100_000,
        }),
        "c.pcapng",
    );
    assert!(err.is_none(), "{err:?}");
    assert_eq!((got.len(), got[0].ts), (1, 9_000));
}

// ---- damaged input ----------------------------------------------------------------------

#[test]
fn empty_file() {
    let (_, err) = read_all(&[], "empty.pcap");
    let e = err.unwrap();
    assert_eq!(e.kind(), "empty");
    assert_eq!(
        e.to_string(),
        "empty.pcap: empty file (0 bytes), not a capture"
    );
}

#[test]
fn wrong_magic_names_what_it_looks_like() {
    let (_, err) = read_all(
        &[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0, 9, 9],
        "trace.pcap.zst",
    );
    let e = err.unwrap();
    assert_eq!(
        (e.kind(), e.file(), e.offset()),
        ("wrong_magic", "trace.pcap.zst", 0)
    );
    assert_eq!(
        e.to_string(),
        "trace.pcap.zst: not a pcap, pcapng or gzip-compressed capture at byte 0: starts with 28 b5 2f fd 00 00 00 00, looks like zstd (decompress it first: zstd -d)"
    );
    let (_, err) = read_all(b"hello, this is text\n", "notes.txt");
    assert!(err.unwrap().to_string().contains("looks like text"));
}

#[test]
fn truncated_file_header() {
    let file = pcap(false, false, 1, &[]);
    let (_, err) = read_all(&file[..10], "short.pcap");
    let e = err.unwrap();
    assert_eq!(
        e.to_string(),
        "short.pcap: truncated file header at byte 0 (need 24 bytes, 10 left)"
    );
    let (_, err) = read_all(&file[..3], "tiny.pcap");
    assert_eq!(err.unwrap().kind(), "truncated_header");
    let ng = pcapng(false, &[Ng::Shb]);
    let (_, err) = read_all(&ng[..20], "short.pcapng");
    assert_eq!(err.unwrap().kind(), "truncated_record");
}

#[test]
fn record_cut_in_the_middle() {
    let rs = eth_tcp_records(4, |_| 1460, 1514);
    let file = pcap(false, false, 1, &rs);
    let last = 24 + 3 * (16 + 1514);
    // Cut 200 bytes into the last record's data.
    let (got, err) = read_all(&file[..last + 16 + 200], "capture.pcap");
    assert_eq!(got.len(), 3);
    let e = err.unwrap();
    assert_eq!(
        e.to_string(),
        format!("capture.pcap: truncated record at byte {last} (header says 1514 bytes, 200 left)")
    );
    // Cut inside the record header.
    let (got, err) = read_all(&file[..last + 5], "capture.pcap");
    assert_eq!(got.len(), 3);
    assert_eq!(
        err.unwrap().to_string(),
        format!("capture.pcap: truncated record at byte {last} (header says 16 bytes, 5 left)")
    );
    // pcapng block cut.
    let ng = pcapng(
        false,
        &[
            Ng::Shb,
            idb(1, None, None),
            epb(1, eth_tcp(0, 0)),
            epb(2, eth_tcp(1, 0)),
        ],
    );
    let (got, err) = read_all(&ng[..ng.len() - 10], "cut.pcapng");
    assert_eq!(got.len(), 1);
    let e = err.unwrap();
    assert_eq!(
        (e.kind(), e.offset()),
        ("truncated_record", got[0].offset + 28 + 56 + 4)
    );
}

#[test]
fn absurd_caplen() {
    let rs = recs(2);
    let mut file = pcap(false, false, 1, &rs);
    let second = 24 + 16 + rs[0].data.len();
    file[second + 8..second + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    let (got, err) = read_all(&file, "corrupt.pcap");
    assert_eq!(got.len(), 1);
    let e = err.unwrap();
    assert_eq!(e.to_string(), format!("corrupt.pcap: absurd record length at byte {second}: 2147483647 bytes (limit {MAX_CAPLEN})"));
    // In pcapng, an EPB whose captured length exceeds its block.
    let mut ng = one_packet_pcapng();
    let epb = ng.len() - (32 + 56);
    ng[epb + 20..epb + 24].copy_from_slice(&100u32.to_le_bytes());
    let (_, err) = read_all(&ng, "c.pcapng");
    let e = err.unwrap();
    assert_eq!((e.kind(), e.offset()), ("malformed", epb as u64));
    assert!(
        e.to_string()
            .contains("captured length 100 exceeds the block length 88"),
        "{e}"
    );
}

#[test]
fn pcapng_bad_block_length() {
    let mut ng = one_packet_pcapng();
    let epb = ng.len() - 88;
    ng[epb + 4..epb + 8].copy_from_slice(&87u32.to_le_bytes());
    let (got, err) = read_all(&ng, "b.pcapng");
    assert!(got.is_empty());
    let e = err.unwrap();
    assert_eq!(e.to_string(), format!("b.pcapng: malformed pcapng block at byte {epb}: block type 0x6 has length 87, must be ≥ 12 and a multiple of 4"));
    // Leading and trailing block lengths disagree.
    let mut ng3 = one_packet_pcapng();
    let n = ng3.len();
    ng3[n - 4..].copy_from_slice(&92u32.to_le_bytes());
    let (_, err) = read_all(&ng3, "t.pcapng");
    let e = err.unwrap();
    assert_eq!((e.kind(), e.offset()), ("malformed", (n - 88) as u64));
    assert!(e.to_string().contains("trailing block length 92 differs from the leading 88"), "{e}");
    // A byte-order magic that is neither order.
    let mut ng2 = pcapng(false, &[Ng::Shb]);
    ng2[8] = 0x99;
    let (_, err) = read_all(&ng2, "bom.pcapng");
    assert_eq!(err.unwrap().kind(), "malformed");
}

#[test]
fn gzip_truncated_or_corrupt_keeps_frames_before() {
    let rs = eth_tcp_records(3000, |_| 200, 254);
    let gz = gzip(&pcap(false, false, 1, &rs));
    let (got, err) = read_all(&gz[..gz.len() / 2], "half.pcap.gz");
    assert!(!got.is_empty() && got.len() < 3000, "{}", got.len());
    let e = err.unwrap();
    assert_eq!(e.kind(), "gzip", "{e}");
    assert!(
        e.to_string()
            .starts_with("half.pcap.gz: gzip error at byte ")
            && e.to_string().contains("of the decompressed stream"),
        "{e}"
    );
    // Frames before the damage are intact.
    for (g, r) in got.iter().zip(&rs) {
        assert_eq!(g.data, r.data);
    }
    // Corrupt deflate data in the middle.
    let mut bad = gz.clone();
    let mid = bad.len() / 2;
    for b in &mut bad[mid..mid + 64] {
        *b ^= 0x5a;
    }
    let (got, err) = read_all(&bad, "bad.pcap.gz");
    assert!(got.len() < 3000);
    assert!(matches!(
        err.unwrap().kind(),
        "gzip" | "absurd_length" | "truncated_record"
    ));
}

#[test]
fn garbage_link_layer_is_counted_not_fatal() {
    let rs = vec![
        Rec {
            sec: 1,
            frac: 0,
            data: eth_tcp(0, 0),
            orig: 54,
        },
        Rec {
            sec: 2,
            frac: 0,
            data: vec![0xff; 9],
            orig: 9,
        },
        Rec {
            sec: 3,
            frac: 0,
            data: vec![],
            orig: 0,
        },
        Rec {
            sec: 4,
            frac: 0,
            data: eth_tcp(1, 0),
            orig: 54,
        },
    ];
    let (got, err) = read_all(&pcap(false, false, 1, &rs), "g.pcap");
    assert!(err.is_none());
    let mut tcp = 0;
    let mut reasons = vec![];
    for g in &got {
        match hsrtcp_core::wire::decode_packet(g.linktype, &g.data, g.orig_len, g.ts) {
            Decoded::Tcp(_) => tcp += 1,
            Decoded::Malformed(r) => reasons.push(r),
            Decoded::NotTcp => {}
        }
    }
    assert_eq!(tcp, 2);
    assert_eq!(
        reasons,
        vec![
            MalformedReason::ShortLinkHeader,
            MalformedReason::ShortLinkHeader
        ]
    );
}

#[test]
fn open_missing_file_names_it() {
    let e = CaptureReader::open(std::path::Path::new("/nonexistent/x.pcap")).unwrap_err();
    assert_eq!(e.kind(), "io");
    assert!(
        e.to_string()
            .starts_with("/nonexistent/x.pcap: cannot read at byte 0:"),
        "{e}"
    );
}

#[test]
fn open_reads_a_file_on_disk() {
    let dir = std::env::temp_dir().join(format!("hsrtcp-reader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("disk.pcap.gz");
    std::fs::write(
        &p,
        gzip(&pcap(
            true,
            true,
            101,
            &[Rec {
                sec: 5,
                frac: 6,
                data: eth_tcp(0, 0)[14..].to_vec(),
                orig: 40,
            }],
        )),
    )
    .unwrap();
    let mut rd = CaptureReader::open(&p).unwrap();
    let f = rd.next_frame().unwrap().unwrap();
    assert_eq!((f.ts, f.linktype), (5_000_000_006, LinkType::RAW));
    assert!(matches!(decode(&f), Decoded::Tcp(_)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Random damage to valid files never panics, never loops, and every error names the file.
#[test]
fn random_damage_never_panics() {
    let mut seed = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let bases = [
        pcap(false, false, 1, &recs(6)),
        pcap(true, true, 113, &recs(6)),
        pcapng(
            false,
            &[
                Ng::Shb,
                idb(1, Some(9), Some(-5)),
                epb(1, eth_tcp(0, 30)),
                Ng::Spb {
                    data: eth_tcp(1, 0),
                    orig: 54,
                },
                Ng::Other {
                    btype: 5,
                    body: vec![1; 16],
                },
                epb(2, eth_tcp(2, 0)),
            ],
        ),
        pcapng(
            true,
            &[
                Ng::Shb,
                idb(276, Some(0x80 | 30), None),
                epb(u64::MAX - 3, eth_tcp(0, 30)),
            ],
        ),
    ];
    let (mut errors, mut clean) = (0, 0);
    for round in 0..20_000u64 {
        let mut b = bases[(round % bases.len() as u64) as usize].clone();
        if round % 7 == 0 {
            b = gzip(&b);
        }
        for _ in 0..1 + next() % 4 {
            let i = (next() % b.len() as u64) as usize;
            match next() % 3 {
                0 => b[i] = next() as u8,
                1 => b.truncate(i),
                _ => b[i] ^= 0x80,
            }
            if b.is_empty() {
                break;
            }
        }
        let (got, err) = read_all(&b, "fuzz.pcap");
        for g in &got {
            let _ = hsrtcp_core::wire::decode_packet(g.linktype, &g.data, g.orig_len, g.ts);
        }
        match err {
            Some(e) => {
                errors += 1;
                assert!(e.to_string().starts_with("fuzz.pcap: "), "{e}");
            }
            None => clean += 1,
        }
    }
    assert!(
        errors > 1000 && clean > 1000,
        "errors {errors} clean {clean}"
    );
}

/// The reader can move to a worker thread (one capture per worker).
#[test]
fn reader_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<CaptureReader>();
}

/// A pcap fraction field at or above one second (10^6 µs, 10^9 ns) is corrupt: before issue
/// 30 item 6 it was added as is (0xFFFFFFFF µs = 71 minutes, a 0.02 s connection read as
/// 3999 s). Such records are skipped and counted per reason; the others come out unchanged.
#[test]
fn pcap_fraction_of_a_second_or_more_is_skipped_and_counted() {
    for be in [false, true] {
        for nanos in [false, true] {
            let one_s = if nanos { 1_000_000_000 } else { 1_000_000 };
            let mut rs = recs(6);
            rs[1].frac = one_s; // the smallest bad value
            rs[3].frac = u32::MAX;
            rs[4].frac = one_s - 1; // the largest good one
            let file = pcap(be, nanos, 1, &rs);
            let mut rd = CaptureReader::from_reader(Box::new(std::io::Cursor::new(file)), "f.pcap".into()).unwrap();
            let mut got = Vec::new();
            while let Some(f) = rd.next_frame().unwrap() {
                got.push((f.ts, f.data.to_vec()));
            }
            let ns = |r: &common::Rec| r.sec as i64 * 1_000_000_000 + r.frac as i64 * if nanos { 1 } else { 1000 };
            let want: Vec<_> = [0, 2, 4, 5].iter().map(|&i| (ns(&rs[i]), rs[i].data.clone())).collect();
            assert_eq!(got, want, "be={be} ns={nanos}");
            assert_eq!(rd.bad_times().fraction, 2);
            assert_eq!(rd.bad_times().reasons().collect::<Vec<_>>(), [("bad_ts_fraction", 2)]);
        }
    }
}

/// pcapng times beyond ±2^63 ns (a huge `if_tsoffset`, `if_tsresol` 10^0 with a large
/// count) were clamped to i64::MAX / MIN: every such packet at one instant. They are skipped
/// and counted; the other packets and interfaces are unaffected.
#[test]
fn pcapng_time_beyond_the_range_is_skipped_and_counted() {
    for be in [false, true] {
        let idb = |tsresol, tsoffset| Ng::Idb { linktype: 1, snaplen: 0, tsresol, tsoffset };
        let epb = |iface, units, i| Ng::Epb { iface, units, data: eth_tcp(i, 0), orig: 54 };
        let blocks = vec![
            Ng::Shb,
            idb(None, None),                   // 0: µs
            idb(Some(0), None),                // 1: whole seconds
            idb(None, Some(i64::MAX / 2)),     // 2: offset of 146 billion years
            idb(None, Some(-1_700_000_000)),   // 3: a plausible negative offset
            epb(0, 1_700_000_000_000_000, 0),
            epb(1, 1_700_000_001, 1),
            epb(1, 10_000_000_000, 2), // 10^10 s: beyond 2^63 ns
            // clamped, these three agreed with each other: a clock step to one instant
            epb(2, 0, 3),
            epb(2, 5, 7),
            epb(2, 9, 8),
            epb(3, 3_400_000_002_000_000, 4),
            epb(0, u64::MAX - 1, 5), // 1.8e13 s of µs
            epb(0, 1_700_000_003_000_000, 6),
        ];
        let (got, err) = read_all(&pcapng(be, &blocks), "r.pcapng");
        assert!(err.is_none(), "{err:?}");
        let ts: Vec<i64> = got.iter().map(|g| g.ts).collect();
        const S: i64 = 1_000_000_000;
        assert_eq!(ts, [1_700_000_000 * S, 1_700_000_001 * S, 1_700_000_002 * S, 1_700_000_003 * S], "be={be}");
        let mut rd = CaptureReader::from_reader(Box::new(std::io::Cursor::new(pcapng(be, &blocks))), "r".into()).unwrap();
        while rd.next_frame().unwrap().is_some() {}
        assert_eq!(rd.bad_times().reasons().collect::<Vec<_>>(), [("ts_out_of_range", 5)]);
    }
}

/// Every frame (owned) and the error that ended the reading, if any.
fn read_through(mut rd: CaptureReader) -> (Vec<(i64, LinkType, Vec<u8>, u32, u64, u32, u64)>, Option<String>) {
    let mut frames = Vec::new();
    loop {
        match rd.next_frame() {
            Ok(Some(f)) => frames.push((f.ts, f.linktype, f.data.to_vec(), f.orig_len, f.offset, f.iface, f.index)),
            Ok(None) => return (frames, None),
            Err(e) => {
                assert!(rd.next_frame().unwrap().is_none(), "nothing after the error");
                return (frames, Some(e.to_string()));
            }
        }
    }
}

/// A plain file on disk is read in place through a memory map (capture/mapped.rs), a stream
/// with read(): both give the same frames, offsets and errors, for pcap of either byte
/// order, pcapng, a record cut at the end and a time jump, in files longer than the map's
/// release step (pages behind the reader are dropped from the map as it goes).
#[test]
fn mapped_file_reads_as_the_stream() {
    let dir = std::env::temp_dir().join(format!("hsrtcp-mapped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let many: Vec<Rec> = (0..6000)
        .map(|i| Rec { sec: 1_700_000_000 + i / 100, frac: i, data: eth_tcp(i, (i as usize * 37) % 1400), orig: 1500 })
        .collect();
    let mut jump = recs(20);
    jump[7].sec += 5 * 86_400;
    let mut cut = pcap(false, false, 1, &many);
    cut.truncate(cut.len() - 100);
    let ng: Vec<Ng> = [Ng::Shb, idb(1, Some(9), None)]
        .into_iter()
        .chain(many.iter().map(|r| epb(r.sec as u64 * 1_000_000_000 + r.frac as u64, r.data.clone())))
        .collect();
    let files = [
        ("le.pcap", pcap(false, false, 1, &many)),
        ("be.pcap", pcap(true, true, 1, &many)),
        ("cut.pcap", cut),
        ("jump.pcap", pcap(false, false, 1, &jump)),
        ("many.pcapng", pcapng(false, &ng)),
    ];
    for (name, bytes) in files {
        assert!(name == "jump.pcap" || bytes.len() > 4 << 20, "{name}: longer than the release step");
        let p = dir.join(name);
        std::fs::write(&p, &bytes).unwrap();
        let mapped = read_through(CaptureReader::open(&p).unwrap());
        let streamed = read_through(
            CaptureReader::from_reader(Box::new(std::io::Cursor::new(bytes)), p.display().to_string()).unwrap(),
        );
        assert!(!mapped.0.is_empty(), "{name}");
        assert_eq!(mapped, streamed, "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A mapped file cut short while it is read: the frames before the cut, then an error that
/// names the file, not a SIGBUS crash (capture/mapped.rs).
#[test]
fn mapped_file_cut_while_read_ends_with_an_error() {
    let dir = std::env::temp_dir().join(format!("hsrtcp-mapped-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("shrinks.pcap");
    let rs: Vec<Rec> = (0..4000).map(|i| Rec { sec: 1_700_000_000, frac: i, data: eth_tcp(i, 400), orig: 454 }).collect();
    std::fs::write(&p, pcap(false, false, 1, &rs)).unwrap();
    let mut rd = CaptureReader::open(&p).unwrap();
    for _ in 0..10 {
        rd.next_frame().unwrap().unwrap();
    }
    // Cut at a page boundary: every page after it is gone from the map.
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(64 << 10).unwrap();
    let (frames, err) = read_through(rd);
    let err = err.expect("an error at the cut");
    assert!(err.contains("shrinks.pcap") && err.contains("shrank"), "{err}");
    // the records wholly before the cut (24-byte file header, 470-byte records)
    assert_eq!(frames.len() + 10, ((64 << 10) - 24) / 470, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
