"""The server name of a QUIC connection, from its client's Initial packets.

A QUIC client's first flight carries the TLS ClientHello in CRYPTO frames of Initial
packets. Those are encrypted, but with keys anyone can derive: RFC 9001 §5.2 derives them
from a published salt and the Destination Connection ID of the client's first Initial, so
an observer can read the ClientHello exactly as the server does (tshark does the same).
RFC 9369 (QUIC version 2) only changes the salt, the labels and the Initial type bits.

Steps, per UDP datagram from the client (RFC 9000 §17.2, RFC 9001 §5):
1. walk the coalesced long-header packets of the datagram, keep the Initial ones;
2. remove header protection (AES-128-ECB over a 16-byte sample after the packet number);
3. decrypt the payload (AES-128-GCM; nonce = IV xor packet number; the header is the AAD);
   a packet that does not authenticate is not QUIC, or not the client's: it is skipped;
4. collect the CRYPTO frames' bytes by offset; once the bytes from offset 0 hold a whole
   ClientHello, read its server_name like a ClientHello over TCP.

The keys derive from the first Initial's DCID: later client Initials (after the server has
replied) keep those keys while their DCID changes, so a conversation remembers it.

Crypto: the ``cryptography`` package (AES, HKDF, HMAC), a maintained library.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

#: version -> (initial salt, label prefix, long-header type bits of an Initial)
VERSIONS = {
    0x00000001: (bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a"), "quic", 0),  # RFC 9001
    0x6B3343CF: (bytes.fromhex("0dede3def700a6db819381be6e269dcbf9bd2ed9"), "quicv2", 1),  # RFC 9369
}
#: ClientHello bytes kept per conversation (a post-quantum key share makes it about 1.8 KB)
KEEP_CRYPTO = 8192
#: client Initial datagrams are padded to at least this (RFC 9000 §14.1): shorter ones are not tried
MIN_INITIAL_DATAGRAM = 1200


def _expand_label(secret: bytes, label: str, length: int) -> bytes:
    """HKDF-Expand-Label of TLS 1.3 (RFC 8446 §7.1) with an empty context."""
    full = b"tls13 " + label.encode()
    info = struct.pack("!HB", length, len(full)) + full + b"\x00"
    return HKDFExpand(hashes.SHA256(), length, info).derive(secret)


@dataclass(frozen=True)
class InitialKeys:
    key: bytes
    iv: bytes
    hp: bytes


def client_initial_keys(version: int, dcid: bytes) -> InitialKeys:
    """The client's Initial keys of a connection whose first Initial had ``dcid``."""
    salt, prefix, _ = VERSIONS[version]
    initial = hmac.new(salt, dcid, hashlib.sha256).digest()  # HKDF-Extract
    client = _expand_label(initial, "client in", 32)
    return InitialKeys(_expand_label(client, f"{prefix} key", 16), _expand_label(client, f"{prefix} iv", 12),
                       _expand_label(client, f"{prefix} hp", 16))


def _varint(b: bytes, p: int) -> tuple[int, int]:
    """A QUIC variable-length integer at ``p`` (RFC 9000 §16): (value, next position)."""
    n = 1 << (b[p] >> 6)
    if p + n > len(b):
        raise IndexError("varint cut")
    v = b[p] & 0x3F
    for i in range(1, n):
        v = (v << 8) | b[p + i]
    return v, p + n


@dataclass
class LongHeader:
    version: int
    dcid: bytes
    initial: bool
    pn_offset: int  # Initial only: where the protected packet number starts
    end: int  # end of this packet within the datagram


def long_headers(datagram: bytes):
    """The coalesced long-header packets of a datagram (stops at a short header or a cut)."""
    p = 0
    while p + 7 <= len(datagram) and datagram[p] & 0xC0 == 0xC0:  # long header, fixed bit
        d = datagram
        version = struct.unpack_from("!I", d, p + 1)[0]
        if version not in VERSIONS:
            return
        ln = d[p + 5]
        if ln > 20 or p + 6 + ln >= len(d):
            return
        dcid = d[p + 6:p + 6 + ln]
        q = p + 6 + ln
        q += 1 + d[q]  # source connection id
        typ = (d[p] >> 4) & 3
        initial = typ == VERSIONS[version][2]
        try:
            if initial:
                token_len, q = _varint(d, q)
                q += token_len
            length, q = _varint(d, q)
        except IndexError:
            return
        if q + length > len(d):
            return
        yield p, LongHeader(version, bytes(dcid), initial, q, q + length)
        p = q + length


def decrypt_initial(datagram: bytes, start: int, h: LongHeader, keys: InitialKeys) -> bytes | None:
    """The plaintext payload of the Initial packet at ``start``, or None if it does not
    authenticate with ``keys``."""
    pn_off = h.pn_offset
    sample = datagram[pn_off + 4:pn_off + 20]
    if len(sample) < 16 or h.end - pn_off < 20:
        return None
    enc = Cipher(algorithms.AES(keys.hp), modes.ECB()).encryptor()
    mask = enc.update(sample) + enc.finalize()
    first = datagram[start] ^ (mask[0] & 0x0F)
    pn_len = (first & 3) + 1
    pn_bytes = bytes(datagram[pn_off + i] ^ mask[1 + i] for i in range(pn_len))
    header = bytes([first]) + bytes(datagram[start + 1:pn_off]) + pn_bytes
    nonce = bytearray(keys.iv)
    for i, b in enumerate(pn_bytes):  # the packet number, right-aligned, xor the IV
        nonce[12 - pn_len + i] ^= b
    try:
        return AESGCM(keys.key).decrypt(bytes(nonce), bytes(datagram[pn_off + pn_len:h.end]), header)
    except InvalidTag:
        return None


def crypto_frames(payload: bytes) -> list[tuple[int, bytes]]:
    """(offset, data) of the CRYPTO frames of a decrypted Initial payload (RFC 9000 §19).
    Initial packets may carry only PADDING, PING, ACK, CRYPTO and CONNECTION_CLOSE; reading
    stops at anything else."""
    out, p = [], 0
    try:
        while p < len(payload):
            t, p = _varint(payload, p)
            if t in (0x00, 0x01):  # PADDING, PING
                continue
            if t in (0x02, 0x03):  # ACK: largest, delay, range count, first range, ranges, [ECN]
                _, p = _varint(payload, p)
                _, p = _varint(payload, p)
                count, p = _varint(payload, p)
                _, p = _varint(payload, p)
                for _ in range(2 * count + (3 if t == 0x03 else 0)):
                    _, p = _varint(payload, p)
            elif t == 0x06:  # CRYPTO
                off, p = _varint(payload, p)
                n, p = _varint(payload, p)
                if p + n > len(payload):
                    break
                out.append((off, bytes(payload[p:p + n])))
                p += n
            elif t in (0x1C, 0x1D):  # CONNECTION_CLOSE
                _, p = _varint(payload, p)
                if t == 0x1C:
                    _, p = _varint(payload, p)
                n, p = _varint(payload, p)
                p += n
            else:
                break
    except IndexError:
        pass
    return out


@dataclass
class Conversation:
    """One QUIC connection seen from the client's first Initial on: the 4-tuple as the
    client sent it."""

    client: tuple[str, int]
    server: tuple[str, int]
    version: int
    keys: InitialKeys
    first_ts: float
    last_ts: float
    bytes: int = 0  # UDP payload, both directions
    datagrams: int = 0
    crypto: dict[int, bytes] = field(default_factory=dict)
    kept: int = 0
    name: str | None = None
    done: bool = False

    def add_client_initials(self, datagram: bytes) -> None:
        """Read the CRYPTO bytes of the datagram's Initials until the ClientHello is whole."""
        for start, h in long_headers(datagram):
            if self.done or not h.initial or h.version != self.version:
                continue
            payload = decrypt_initial(datagram, start, h, self.keys)
            if payload is None:
                continue
            for off, data in crypto_frames(payload):
                if off < KEEP_CRYPTO and off not in self.crypto and self.kept < KEEP_CRYPTO:
                    self.crypto[off] = data
                    self.kept += len(data)
            self._try_name()

    def _try_name(self) -> None:
        hs, pos = b"", 0
        for off in sorted(self.crypto):  # the contiguous bytes from offset 0
            data = self.crypto[off]
            if off > pos:
                break
            hs += data[pos - off:]
            pos = max(pos, off + len(data))
        if len(hs) >= 4 and len(hs) >= 4 + int.from_bytes(hs[1:4], "big"):
            self.name = client_hello_sni(hs)
            self.done = True
        elif self.kept >= KEEP_CRYPTO:
            self.done = True


def first_client_initial(datagram: bytes) -> tuple[int, bytes] | None:
    """(version, DCID) if the datagram starts with an Initial a client could have sent first."""
    if len(datagram) < MIN_INITIAL_DATAGRAM:
        return None
    for _, h in long_headers(datagram):
        return (h.version, h.dcid) if h.initial and len(h.dcid) >= 8 else None
    return None


def client_hello_sni(hs: bytes) -> str | None:
    """The server_name of the ClientHello handshake message at the start of ``hs`` (the
    bytes of TLS records over TCP, or of QUIC CRYPTO frames)."""
    if len(hs) < 4 or hs[0] != 1:
        return None
    body = hs[4:4 + int.from_bytes(hs[1:4], "big")]
    try:
        p = 2 + 32  # version, random
        p += 1 + body[p]  # session id
        p += 2 + struct.unpack_from("!H", body, p)[0]  # cipher suites
        p += 1 + body[p]  # compression methods
        end = p + 2 + struct.unpack_from("!H", body, p)[0]
        p += 2
        while p + 4 <= min(end, len(body)):
            typ, n = struct.unpack_from("!HH", body, p)
            if typ == 0:  # server_name: list length(2), type(1) = host_name, length(2), name
                q = p + 4 + 2
                while q + 3 <= p + 4 + n:
                    kind, ln = body[q], struct.unpack_from("!H", body, q + 1)[0]
                    if kind == 0:
                        name = body[q + 3:q + 3 + ln]
                        return name.decode("ascii", "replace").lower().rstrip(".") if len(name) == ln else None
                    q += 3 + ln
                return None
            p += 4 + n
    except (IndexError, struct.error):
        return None
    return None
