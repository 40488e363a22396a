"""The mutation classes of the reliability review of 2026-12-04 (section 3), as functions from a
golden trace (its bytes) to changed copies: one field, one chunk or one copy changed at a time.
check_trace_mutations.py runs them; each case is (class name, description, {file name: bytes}).
The trace layout is common/trace_framing.h's: a file header (magic, version, header size, pid),
then chunks of a 16-byte header (magic, payload bytes, tid, checksum) and records."""
import struct

CHUNK_MAGIC = 0x4B4E4843
PROCESS_INFO = 1  # common/trace_records.inc
MASK64 = (1 << 64) - 1


def content_hash64(data):
    """common/trace_framing.h's content_hash64, for chunks whose payload a case rewrites."""
    h = (0x9E3779B97F4A7C15 ^ len(data)) & MASK64
    whole = len(data) // 8 * 8
    for (word,) in struct.iter_unpack("<Q", data[:whole]):
        h = ((h ^ word) * 0x100000001B3) & MASK64
        h ^= h >> 32
    for b in data[whole:]:
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h ^ (h >> 29)


def chunk_checksum(payload, seal=0):
    h = content_hash64(payload) ^ seal
    return (h ^ (h >> 32)) & 0xFFFFFFFF


class Trace:
    def __init__(self, data):
        self.data = bytes(data)
        self.version, self.header_size = struct.unpack_from("<II", data, 8)
        self.pid = struct.unpack_from("<Q", data, 16)[0]
        self.chunks = []  # (offset, total length), header included
        pos = self.header_size
        while pos + 16 <= len(data):
            n = struct.unpack_from("<I", data, pos + 4)[0]
            self.chunks.append((pos, 16 + n))
            pos += 16 + n

    def chunk(self, i):
        at, n = self.chunks[i]
        return self.data[at : at + n]

    def tid(self, i):
        return struct.unpack_from("<I", self.data, self.chunks[i][0] + 8)[0]

    def header(self):
        return self.data[: self.header_size]

    def joined(self, chunks):
        return self.header() + b"".join(chunks)

    def all_chunks(self):
        return [self.chunk(i) for i in range(len(self.chunks))]

    def first_record_type(self, i):
        return struct.unpack_from("<H", self.data, self.chunks[i][0] + 16)[0] if self.chunks[i][1] > 16 else None

    def process_chunk(self):
        """The chunk that starts with the process record (the first, in every trace the writer makes)."""
        return next((i for i in range(len(self.chunks)) if self.first_record_type(i) == PROCESS_INFO), None)


def flip(data, byte, bit):
    out = bytearray(data)
    out[byte] ^= 1 << bit
    return bytes(out)


def header_cases(t):
    """Single-bit flips in the version, header size and pid fields; the header size set to each chunk
    boundary; the version set to every other value up to 8."""
    for field, at, bits in (("version", 8, 32), ("header_size", 12, 32), ("pid", 16, 64)):
        for bit in range(bits):
            yield "header-bit", "%s bit %d" % (field, bit), flip(t.data, at + bit // 8, bit % 8)
    for at, _ in t.chunks[1:]:
        out = bytearray(t.data)
        struct.pack_into("<I", out, 12, at)
        yield "header-size-boundary", "header size %d" % at, bytes(out)
    for version in range(1, 9):
        if version != t.version:
            out = bytearray(t.data)
            struct.pack_into("<I", out, 8, version)
            yield "version", "version %d" % version, bytes(out)


def chunk_header_cases(t):
    """tid bits 0, 1, 4, 16, 31, a magic bit and a checksum bit of each chunk's header."""
    for i, (at, _) in enumerate(t.chunks):
        for bit in (0, 1, 4, 16, 31):
            yield "chunk-tid-bit", "chunk %d tid bit %d" % (i, bit), flip(t.data, at + 8 + bit // 8, bit % 8)
        yield "chunk-magic-bit", "chunk %d magic bit 0" % i, flip(t.data, at, 0)
        yield "chunk-checksum-bit", "chunk %d checksum bit 0" % i, flip(t.data, at + 12, 0)


def cut_cases(t):
    """The trace cut at every chunk boundary (the last chunks lost whole)."""
    for i, (at, _) in enumerate(t.chunks[1:], start=1):
        yield "cut-at-boundary", "cut before chunk %d" % i, t.data[:at]


def with_tid(chunk, tid):
    out = bytearray(chunk)
    struct.pack_into("<I", out, 8, tid)
    return bytes(out)


def repeat_cases(t):
    """A chunk repeated under another thread id: appended at the end, or just after itself."""
    chunks = t.all_chunks()
    for i, c in enumerate(chunks):
        other = with_tid(c, (t.tid(i) + 1) & 0xFFFFFFFF)
        yield "repeat-other-tid", "chunk %d appended with tid+1" % i, t.joined(chunks + [other])
        yield "repeat-other-tid", "chunk %d repeated in place with tid+1" % i, t.joined(
            chunks[: i + 1] + [other] + chunks[i + 1 :]
        )


def foreign_cases(t, other):
    """A chunk of another trace appended, inserted in the middle, or in place of one of this trace's."""
    mine = t.all_chunks()
    for j, c in enumerate(other.all_chunks()):
        middle = len(mine) // 2
        yield "foreign-chunk", "other's chunk %d appended" % j, t.joined(mine + [c])
        yield "foreign-chunk", "other's chunk %d inserted at %d" % (j, middle), t.joined(
            mine[:middle] + [c] + mine[middle:]
        )
        k = j % len(mine)
        yield "foreign-chunk", "other's chunk %d in place of chunk %d" % (j, k), t.joined(
            mine[:k] + [c] + mine[k + 1 :]
        )


def reorder_cases(t):
    """Two chunks of one thread swapped (the reader merges by sequence number: the same report)."""
    chunks = t.all_chunks()
    by_tid = {}
    for i in range(len(chunks)):
        by_tid.setdefault(t.tid(i), []).append(i)
    for tid, idx in sorted(by_tid.items()):
        for a, b in zip(idx, idx[1:]):
            swapped = list(chunks)
            swapped[a], swapped[b] = swapped[b], swapped[a]
            yield "swap-same-thread", "chunks %d and %d of tid %d swapped" % (a, b, tid), t.joined(swapped)


def resealed(t, chunk, payload):
    """`chunk` with `payload`, its checksum made anew as the writer of this version computes it."""
    tid = struct.unpack_from("<I", chunk, 8)[0]
    seal = chunk_seal(t.version, t.pid, tid, t.data[24:32] if t.header_size >= 32 else b"")
    return struct.pack("<IIII", CHUNK_MAGIC, len(payload), tid, chunk_checksum(payload, seal)) + payload


def chunk_seal(version, pid, tid, nonce):
    """Version 7 on: the checksum covers the file's version, pid and nonce (FileIdentity, 8 bytes) and
    the chunk's tid too (common/trace_framing.h's chunk_seal); 0 before."""
    if version < 7:
        return 0
    words = struct.pack("<QQQ", version, pid, tid) + nonce
    return content_hash64(words)


def as_version_7(t, nonce=0x600DF00D):
    """A version-6 trace framed as version 7 writes it (the records are the same): the header with the
    file's nonce, each chunk's checksum sealed with it. For the goldens recorded before version 7."""
    assert t.version == 6, "only version 6's records are version 7's"
    identity = struct.pack("<Q", nonce)
    header = bytearray(t.data[:24])
    struct.pack_into("<II", header, 8, 7, 32)
    out = [bytes(header), identity]
    for i in range(len(t.chunks)):
        c = t.chunk(i)
        tid = struct.unpack_from("<I", c, 8)[0]
        payload = c[16:]
        seal = chunk_seal(7, t.pid, tid, identity)
        out.append(struct.pack("<IIII", CHUNK_MAGIC, len(payload), tid, chunk_checksum(payload, seal)) + payload)
    return Trace(b"".join(out))


def copy_cases(t, name):
    """Copies of the trace beside it, as trace-PID.1.cutrace (the writer's name for a reused pid): byte
    for byte, with the process start moved by 1 ns or 1 h, or without the first chunk; and the
    trace itself without its first chunk."""
    chunks = t.all_chunks()
    copy = "trace-%d.1.cutrace" % t.pid
    yield "copy", "byte-identical copy", {name: t.data, copy: t.data}
    p = t.process_chunk()
    if p is not None:
        for label, delta in (("1 ns", 1), ("1 h", 3600 * 10**9)):
            chunk = chunks[p]
            payload = bytearray(chunk[16:])
            start = struct.unpack_from("<Q", payload, 24)[0]  # ProcessInfoRecord::start_realtime_ns
            struct.pack_into("<Q", payload, 24, (start + delta) & MASK64)
            moved = list(chunks)
            moved[p] = resealed(t, chunk, bytes(payload))
            yield "copy", "copy with the start %s later" % label, {name: t.data, copy: t.joined(moved)}
    yield "copy", "copy without its first chunk", {name: t.data, copy: t.joined(chunks[1:])}
    yield "copy", "the trace without its first chunk", {name: t.joined(chunks[1:])}


def v1_flip_cases(t):
    """The version set to 1 (no checksums) with one payload bit flipped in each chunk."""
    if t.version == 1:
        return
    for i, (at, n) in enumerate(t.chunks):
        if n <= 24:
            continue
        out = bytearray(t.data)
        struct.pack_into("<I", out, 8, 1)
        out[at + 16 + (n - 16) // 2] ^= 1
        yield "version-1-flip", "version 1, chunk %d's payload flipped" % i, bytes(out)
