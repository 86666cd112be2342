//! Any bytes as one captured frame: the first byte picks the link type, the next four the
//! original length. The decoder must never panic, and a TCP result must be consistent.
#![no_main]

use hsrtcp_core::capture::LinkType;
use hsrtcp_core::wire::tunnel::MAX_DEPTH;
use hsrtcp_core::wire::{decode_packet_outer, Decoded};
use libfuzzer_sys::fuzz_target;

// (50 PPP_HDLC, 51 PPP_ETHER and 104 C_HDLC lead into the tunnel decoder's link layers)
const LINKTYPES: [u32; 15] = [0, 1, 9, 12, 14, 101, 108, 113, 228, 229, 276, 147, 50, 51, 104];

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let lt = LinkType(LINKTYPES[data[0] as usize % LINKTYPES.len()]);
    let orig = u32::from_le_bytes([data[1], data[2], data[3], data[4]]) % (1 << 20);
    let frame = &data[5..];
    let (decoded, outer) = decode_packet_outer(lt, frame, orig, 0);
    // An encapsulation is reported exactly for tunneled TCP segments, within the depth bound.
    match (&decoded, &outer) {
        (Decoded::Tcp(s), Some(o)) => assert!(s.outer != 0 && o.depth() >= 1 && o.depth() <= MAX_DEPTH),
        (Decoded::Tcp(s), None) => assert_eq!(s.outer, 0),
        (_, o) => assert!(o.is_none()),
    }
    if let Decoded::Tcp(s) = decoded {
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
