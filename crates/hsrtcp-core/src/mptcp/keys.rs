//! Tokens and initial data sequence numbers from MPTCP keys.
//!
//! RFC 8684 §3.1/§3.2 (v1): the token is the most significant 32 bits of SHA-256 of the
//! key (the key as 8 bytes, network order), the IDSN the least significant 64 bits. RFC 6824
//! (v0) does the same with SHA-1.

use sha1::Sha1;
use sha2::{Digest, Sha256};

/// (token, IDSN) of `key` for MPTCP `version` (0: SHA-1, anything else: SHA-256).
pub fn token_and_idsn(key: u64, version: u8) -> (u32, u64) {
    let k = key.to_be_bytes();
    let (hi, lo) = if version == 0 {
        let h = Sha1::digest(k);
        (to_u32(&h[..4]), to_u64(&h[h.len() - 8..]))
    } else {
        let h = Sha256::digest(k);
        (to_u32(&h[..4]), to_u64(&h[h.len() - 8..]))
    };
    (hi, lo)
}

fn to_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().expect("4 bytes"))
}

fn to_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_and_idsn_are_the_digest_ends() {
        // Independent witness: Python's hashlib on the same 8 bytes,
        // hashlib.sha256(bytes.fromhex("0123456789abcdef")).hexdigest() =
        // 55c53f5d490297900cefa825d0c8e8e9532ee8a118abe7d8570762cd38be9818
        let (t, i) = token_and_idsn(0x0123_4567_89ab_cdef, 1);
        assert_eq!(t, 0x55c5_3f5d);
        assert_eq!(i, 0x570762cd38be9818);
        // hashlib.sha1(bytes.fromhex("0123456789abcdef")).hexdigest() =
        // 0ca2eadb529ac2e63abf9b4ae3df8ee121f10547
        let (t0, i0) = token_and_idsn(0x0123_4567_89ab_cdef, 0);
        assert_eq!(t0, 0x0ca2_eadb);
        assert_eq!(i0, 0xe3df8ee121f10547);
    }
}
