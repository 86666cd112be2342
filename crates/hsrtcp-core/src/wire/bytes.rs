//! Big-endian reads of header fields, shared by the wire decoders (inlined: they sit on the
//! per-packet path).

#[inline]
pub(super) fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

#[inline]
pub(super) fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}
