//! Witness on a real capture: real kernel TCP on the loopback interface, captured by
//! tcpdump (pcap, snaplen 128) and by dumpcap (pcapng), read by our reader and decoder.
//!
//! Ground truth: the application wrote exactly `SENT` bytes, and loopback does not lose
//! packets, so the decoded payload lengths from client to server must add up to `SENT`
//! (with a snaplen of 128 the payload bytes are not in the file: only the IP header can
//! give this number). Every decoded field is also compared with tshark's reading.
//!
//! Needs root (capturing) and tcpdump/tshark; skips with a message otherwise.
//! Run alone: `cargo test -p hsrtcp-core --test real_capture -- --nocapture`

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hsrtcp_core::capture::{CaptureFormat, CaptureReader};
use hsrtcp_core::wire::{decode, Decoded};

const SENT: usize = 3_000_000;

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

/// Start a capture tool and wait until it says it is listening.
fn start(cmd: &mut Command, ready: &str) -> Child {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start capture tool");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let ready = ready.to_string();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains(&ready) {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("capture tool did not start");
    // dumpcap announces itself before its capture is open.
    std::thread::sleep(Duration::from_millis(1000));
    child
}

fn stop(mut child: Child) {
    // Capture buffers are handed over in blocks with a timeout: give them time.
    std::thread::sleep(Duration::from_millis(1200));
    let _ = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "capture tool did not stop"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn transfer(listener: TcpListener) {
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            got += n;
        }
        got
    });
    let mut c = TcpStream::connect(addr).unwrap();
    let chunk = vec![0x5au8; 10_000];
    for _ in 0..SENT / chunk.len() {
        c.write_all(&chunk).unwrap();
    }
    c.shutdown(std::net::Shutdown::Write).unwrap();
    drop(c);
    assert_eq!(server.join().unwrap(), SENT);
}

/// Read and decode the capture; compare with tshark; return payload bytes per direction.
fn check(path: &Path, server_port: u16) -> (u64, u64, usize) {
    let rows = common::tshark_rows(path);
    let mut rd = CaptureReader::open(path).unwrap();
    let (mut up, mut down, mut n, mut truncated) = (0u64, 0u64, 0usize, 0usize);
    while let Some(f) = rd.next_frame().unwrap() {
        let d = decode(&f);
        let Decoded::Tcp(s) = &d else {
            panic!("{}: frame {} not TCP", path.display(), n + 1)
        };
        let ours = common::tshark_line(&d);
        assert_eq!(ours, rows[n], "{}: frame {}", path.display(), n + 1);
        if s.dport == server_port {
            up += s.payload_len as u64;
        } else {
            down += s.payload_len as u64;
        }
        truncated += s.payload_truncated as usize;
        n += 1;
    }
    assert_eq!(n, rows.len());
    (up, down, truncated)
}

#[test]
fn loopback_transfer_captured_by_tcpdump_and_dumpcap() {
    if !is_root() || !have("tcpdump") || !have("tshark") {
        eprintln!("SKIPPED: needs root, tcpdump and tshark to capture a real transfer");
        return;
    }
    let dir = std::env::temp_dir().join(format!("hsrtcp-real-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let filter = format!("tcp port {port}");
    let pcap = dir.join("lo.pcap");
    let ng = dir.join("lo.pcapng");
    let td = start(
        Command::new("tcpdump")
            .args([
                "-i",
                "lo",
                "-s",
                "128",
                "-U",
                "--immediate-mode",
                "-n",
                "-w",
            ])
            .arg(&pcap)
            .arg(&filter),
        "listening on",
    );
    let dc = if have("dumpcap") {
        Some(start(
            Command::new("dumpcap")
                .args(["-i", "lo", "-s", "128", "-f", &filter, "-w"])
                .arg(&ng),
            "Capturing on",
        ))
    } else {
        None
    };
    transfer(listener);
    stop(td);
    if let Some(dc) = dc {
        stop(dc);
    }

    let (up, down, truncated) = check(&pcap, port);
    assert_eq!(
        up, SENT as u64,
        "client→server payload must equal what the application wrote"
    );
    assert_eq!(down, 0);
    assert!(truncated > 0, "snaplen 128 must cut the data segments");
    assert!(matches!(
        CaptureReader::open(&pcap).unwrap().format(),
        CaptureFormat::Pcap { .. }
    ));

    // The same capture gzip-compressed gives the same numbers.
    let gz = dir.join("lo.pcap.gz");
    std::fs::write(&gz, common::gzip(&std::fs::read(&pcap).unwrap())).unwrap();
    assert_eq!(check(&gz, port).0, SENT as u64);

    if ng.exists() {
        assert_eq!(
            CaptureReader::open(&ng).unwrap().format(),
            CaptureFormat::PcapNg
        );
        let (up, down, _) = check(&ng, port);
        assert_eq!((up, down), (SENT as u64, 0));
    } else {
        eprintln!("dumpcap not installed: pcapng part skipped");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
