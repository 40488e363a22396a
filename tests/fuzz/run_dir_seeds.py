"""Seeds for fuzz_run_dir: each golden run's files joined in the order fuzz_run_dir.cpp reads them
(the side files, then its first trace twice over: a parent and a copy), within the harness's
longest input (fuzz.sh's fuzz_max_len). Usage: run_dir_seeds.py OUT_DIR GOLDEN_DIR MAX_LEN

A run whose traces do not fit gives three seeds instead of one: its traces cut at the cap (a cut
trace, which the report must call cut), and its first trace *sampled*: its records regrouped into
small chunks (each resealed as the writer of its version seals them), of which the process record's,
one for each kind of record, and the last ones are kept. Without the sampled seed the records deep
in a long trace (graphs, pools, signals, migrations: some 450 edges) were out of the cap's reach."""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from trace_mutations import CHUNK_MAGIC, Trace, chunk_checksum, chunk_seal  # noqa: E402

SEPARATOR = b"\n--cuaudit-file--\n"
SIDE_FILES = ["run.json", "symbols.json", "call_sites.json", "kernel-access.json"]
PIECE = 2048  # bytes of records in a regrouped chunk


def records(payload):
    """(type, bytes) of each record in a chunk's payload (common/trace_framing.h's RecordHeader)."""
    at = 0
    while at + 8 <= len(payload):
        kind, size = struct.unpack_from("<HH", payload, at)
        if size < 8 or at + size > len(payload):
            return
        yield kind, payload[at : at + size]
        at += size


def regrouped(t):
    """The trace's chunks split into pieces of at most PIECE bytes of whole records, in order, each
    with its thread's id and a checksum made as this version's writer makes it. (types, bytes) each."""
    nonce = t.data[24:32] if t.header_size >= 32 else b""
    pieces = []
    for i in range(len(t.chunks)):
        tid = t.tid(i)
        group, kinds = [], set()
        for kind, record in list(records(t.chunk(i)[16:])) + [(None, None)]:
            if group and (record is None or sum(map(len, group)) + len(record) > PIECE):
                payload = b"".join(group)
                checksum = chunk_checksum(payload, chunk_seal(t.version, t.pid, tid, nonce)) if t.version > 1 else 0
                pieces.append((kinds, struct.pack("<IIII", CHUNK_MAGIC, len(payload), tid, checksum) + payload))
                group, kinds = [], set()
            if record is not None:
                group.append(record)
                kinds.add(kind)
    return pieces


def sampled(t, room):
    """The trace's header and, in their order, the regrouped chunks that fit in `room` bytes: the
    first (the process record), then one for each kind of record not yet kept, then the last ones."""
    pieces = regrouped(t)
    keep, kinds, used = set(), set(), len(t.header())

    def take(i):
        nonlocal used
        if i not in keep and used + len(pieces[i][1]) <= room:
            keep.add(i)
            kinds.update(pieces[i][0])
            used += len(pieces[i][1])

    if pieces:
        take(0)
    for i, (piece_kinds, _) in enumerate(pieces):
        if piece_kinds - kinds:
            take(i)
    for i in reversed(range(len(pieces))):
        take(i)
    return t.header() + b"".join(pieces[i][1] for i in sorted(keep))


def seeds(run_dir, max_len):
    """(name suffix, input bytes) for one golden run directory."""
    traces = sorted(f for f in os.listdir(run_dir) if f.endswith(".cutrace"))
    if not traces:
        return

    def read(name):
        path = os.path.join(run_dir, name or "")
        return open(path, "rb").read() if name and os.path.isfile(path) else b""

    def compact(data):  # the JSON files without their indentation: more room for the traces
        try:
            return json.dumps(json.loads(data), separators=(",", ":")).encode() if data else data
        except ValueError:
            return data

    torch = next((f for f in os.listdir(run_dir) if f.startswith("torch-blocks-")), None)
    sides = [compact(read(n)) for n in SIDE_FILES] + [compact(read(torch)), b""]
    if sum(map(len, sides)) > max_len // 2:  # a large symbol cache: the run without it
        sides[sides.index(max(sides, key=len))] = b""
    first = read(traces[0])
    second = read(traces[1]) if len(traces) > 1 else first
    room = max_len - sum(map(len, sides)) - len(SEPARATOR) * 7
    joined = lambda *traces: SEPARATOR.join(sides + list(traces))
    yield "-header-only", joined(first[:32], b"")
    if len(first) + len(second) <= room:
        yield "", joined(first, second)
        return
    half = max(room // 2, 0)
    yield "-cut", joined(first[:half], second[:half])
    if len(first) >= 24 and struct.unpack_from("<I", first, 8)[0] >= 2:
        yield "-sampled", joined(sampled(Trace(first), room))


def main(out, golden, max_len):
    for run in sorted(os.listdir(golden)):
        if os.path.isdir(os.path.join(golden, run)):
            for suffix, data in seeds(os.path.join(golden, run), max_len):
                open(os.path.join(out, run + suffix), "wb").write(data[:max_len])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
