//! Any bytes as one captured frame: the first byte picks the link type, the next four the
//! original length. The decoder must never panic, and a TCP result must be consistent.
#![no_main]

use hsrtcp_core::capture::LinkType;
use hsrtcp_core::wire::{decode_packet, Decoded};
use libfuzzer_sys::fuzz_target;

const LINKTYPES: [u32; 12] = [0, 1, 9, 12, 14, 101, 108, 113, 228, 229, 276, 147];

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let lt = LinkType(LINKTYPES[data[0] as usize % LINKTYPES.len()]);
    let orig = u32::from_le_bytes([data[1], data[2], data[3], data[4]]) % (1 << 20);
    let frame = &data[5..];
    if let Decoded::Tcp(s) = decode_packet(lt, frame, orig, 0) {
        assert!(s.options.sack_count <= 4);
        assert_eq!(s.options.sack_blocks().len(), s.options.sack_count as usize);
        if !s.payload_truncated {
            // Not truncated: the whole payload was captured.
            assert!((s.payload_len as usize) < frame.len());
        }
        if let Some(m) = s.options.mptcp {
            assert!(m.len >= 3 && m.body().len() <= 32);
            // The MPTCP layer's decoding: a value or a malformed reason, never a panic.
            let _ = m.decode();
        }
    }
});
