//! The reader and decoder on the committed real captures of `tests/data/` (made by the
//! namespace testbed, see its README): every frame agrees with tshark, and every broken
//! file stops where its README says, with the file name and byte offset in the error.
//!
//! Skips (with a message) when the fixtures or tshark are missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use hsrtcp_core::capture::{CaptureError, CaptureReader};
use hsrtcp_core::wire::{decode, Decoded};

/// The repository's `tests/data`, or `$HSRTCP_TEST_DATA`.
fn data_dir() -> PathBuf {
    match std::env::var_os("HSRTCP_TEST_DATA") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data"),
    }
}

/// (frames decoded: TCP / not TCP / malformed reasons, error).
fn read(path: &Path) -> (Vec<Decoded>, Option<CaptureError>) {
    let mut out = Vec::new();
    let mut r = match CaptureReader::open(path) {
        Ok(r) => r,
        Err(e) => return (out, Some(e)),
    };
    loop {
        match r.next_frame() {
            Ok(Some(f)) => out.push(decode(&f)),
            Ok(None) => return (out, None),
            Err(e) => return (out, Some(e)),
        }
    }
}

#[test]
fn real_fixtures_agree_with_tshark() {
    let dir = data_dir();
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("SKIPPED: tshark is not installed");
        return;
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("SKIPPED: no fixtures in {}", dir.display());
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.to_string_lossy().contains(".pcap"))
        .collect();
    files.sort();
    let mut frames = 0;
    for p in &files {
        let (dec, err) = read(p);
        assert!(
            err.is_none(),
            "{}: {:?}",
            p.display(),
            err.map(|e| e.to_string())
        );
        let rows = common::tshark_rows(p);
        assert_eq!(dec.len(), rows.len(), "{}", p.display());
        for (i, (d, row)) in dec.iter().zip(&rows).enumerate() {
            assert!(
                !matches!(d, Decoded::Malformed(_)),
                "{} frame {}: {d:?}",
                p.display(),
                i + 1
            );
            assert_eq!(&common::tshark_line(d), row, "{} frame {}", p.display(), i + 1);
        }
        frames += dec.len();
    }
    eprintln!(
        "{} fixture captures, {frames} frames agree with tshark",
        files.len()
    );
}

#[test]
fn broken_fixtures_fail_where_the_readme_says() {
    let dir = data_dir().join("broken");
    if !dir.is_dir() {
        eprintln!("SKIPPED: no broken fixtures in {}", dir.display());
        return;
    }
    // (file, frames before the error, error kind, error offset)
    let cases: [(&str, usize, Option<(&str, u64)>); 7] = [
        ("wrong_magic.pcap", 0, Some(("wrong_magic", 0))),
        (
            "truncated_global_header.pcap",
            0,
            Some(("truncated_header", 0)),
        ),
        ("record_cut.pcap", 5, Some(("truncated_record", 574))),
        ("absurd_caplen.pcap", 3, Some(("absurd_length", 286))),
        ("empty.pcap", 0, Some(("empty", 0))),
        ("header_only.pcap", 0, None),
        (
            "pcapng_bad_block_length.pcapng",
            0,
            Some(("malformed", 128)),
        ),
    ];
    for (name, n, want) in cases {
        let p = dir.join(name);
        if !p.exists() {
            eprintln!("missing fixture {name}: skipped");
            continue;
        }
        let (dec, err) = read(&p);
        assert_eq!(dec.len(), n, "{name}: frames before the error");
        match (want, err) {
            (None, None) => {}
            (Some((kind, offset)), Some(e)) => {
                assert_eq!((e.kind(), e.offset()), (kind, offset), "{name}: {e}");
                assert!(e.to_string().starts_with(&p.display().to_string()), "{e}");
                if kind != "empty" {
                    assert!(e.to_string().contains(&format!("at byte {offset}")), "{e}");
                }
            }
            (w, e) => panic!("{name}: expected {w:?}, got {:?}", e.map(|e| e.to_string())),
        }
    }
    // Records 2–7 are damaged link/IP/TCP headers: counted as malformed, never fatal.
    let p = dir.join("garbage_linklayer.pcap");
    if p.exists() {
        let (dec, err) = read(&p);
        assert!(err.is_none());
        let kinds: Vec<&str> = dec
            .iter()
            .map(|d| match d {
                Decoded::Tcp(_) => "tcp",
                Decoded::NotTcp => "other",
                Decoded::Malformed(r) => r.name(),
            })
            .collect();
        assert_eq!(dec.len(), 12);
        assert!(
            kinds[..1].iter().chain(&kinds[7..]).all(|k| *k == "tcp"),
            "{kinds:?}"
        );
        assert!(kinds[1..7].iter().all(|k| *k != "tcp"), "{kinds:?}");
        eprintln!("garbage_linklayer: {kinds:?}");
    }
}
