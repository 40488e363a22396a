// The trace file's framing (trace_format.h says how a file is made): its magic and version, the
// file and chunk headers with their checksums, the header every record starts with, and the
// values records use for "no stack" and "no device".
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuaudit::trace {

inline constexpr char kFileMagic[8] = {'C', 'U', 'A', 'U', 'D', 'T', 'R', 'C'};
// Version 2: chunks carry a checksum of their payload. Version 3: allocations and releases are
// written as CompactEventRecords, relative to the thread's previous one. Version 4: a LaunchBitsRecord
// may carry a problem (a word of a by-value struct pointing to no memory the driver knows, or into
// host memory). Version 5: a pool's blocks are PoolBlockRecords (source, pool and operation said
// explicitly) and its memory PoolSegmentRecords; before, blocks were allocation and release records
// of pseudo-APIs whose context field carried the pool. Version 6: once exit began, each chunk is
// followed by a TraceClosed chunk (a file cut after its end record is known). Version 7: the header
// goes on with a number drawn when the file was made (FileIdentity), and each chunk's checksum
// covers it, the version, the pid and the chunk's thread id (chunk_seal): a chunk of another file,
// or one given another thread id, and a header whose version or pid changed, fail their checksums.
// Versions 1 to 6 are still read.
inline constexpr uint32_t kTraceVersion = 7;
inline constexpr uint32_t kFirstClosedVersion = 6;
inline constexpr uint32_t kFirstSealedVersion = 7;
inline constexpr uint32_t kOldestReadableVersion = 1;
inline constexpr uint32_t kChunkMagic = 0x4b4e4843;  // "CHNK"
inline constexpr size_t kMaxStackDepth = 64;
inline constexpr size_t kMaxBuildIdBytes = 32;
inline constexpr size_t kMaxRecordBytes = 0xfff8;  // RecordHeader::size is 16 bits

// What every version's file starts with.
struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // file_header_size(version): where the first chunk starts
  uint64_t pid;
};
static_assert(sizeof(FileHeader) == 24);

// Version 7 on, right after the FileHeader: drawn when the file was made, so that no two files
// share it (not even two runs of one pid, as in a container).
struct FileIdentity {
  uint64_t nonce;
};
static_assert(sizeof(FileIdentity) == 8);

inline constexpr uint32_t file_header_size(uint32_t version) {
  return version >= kFirstSealedVersion ? sizeof(FileHeader) + sizeof(FileIdentity) : sizeof(FileHeader);
}

// How a file of this version starts: what the writer (and whatever makes traces the writer's way)
// writes before the first chunk.
struct FileStart {
  FileHeader header;
  FileIdentity identity;
};
static_assert(sizeof(FileStart) == file_header_size(kTraceVersion));

inline FileStart file_start(uint64_t pid, uint64_t nonce) {
  FileStart start{};
  __builtin_memcpy(start.header.magic, kFileMagic, sizeof start.header.magic);
  start.header.version = kTraceVersion;
  start.header.header_size = sizeof start;
  start.header.pid = pid;
  start.identity.nonce = nonce;
  return start;
}

struct ChunkHeader {
  uint32_t magic;
  uint32_t payload_bytes;
  uint32_t tid;
  uint32_t checksum;  // chunk_checksum of the payload, sealed (chunk_seal) version 7 on; 0 in version 1
};

// Word-wise multiply-xor over `bytes`: cheap (about 5 us for 64 KiB), not cryptographic. Names a
// kernel-code file by its content (ModuleCodeRecord::hash) and checks chunks (chunk_checksum).
inline uint64_t content_hash64(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x9e3779b97f4a7c15ull ^ bytes;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t word;
    __builtin_memcpy(&word, p + i, 8);
    h = (h ^ word) * 0x100000001b3ull;
    h ^= h >> 32;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

// What a chunk's header says of its payload, so that a flipped byte is a damaged chunk, not a
// silently different finding: cheap enough for every flush (a full 64 KiB buffer).
// `seal`: chunk_seal's, version 7 on; 0 before.
inline uint32_t chunk_checksum(const void* data, size_t bytes, uint64_t seal = 0) {
  const uint64_t h = content_hash64(data, bytes) ^ seal;
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// What a version-7 chunk's checksum covers besides its payload: the file it belongs to and the
// thread that wrote it.
inline uint64_t chunk_seal(uint32_t version, uint64_t pid, uint64_t nonce, uint32_t tid) {
  if (version < kFirstSealedVersion) return 0;
  const uint64_t words[4] = {version, pid, tid, nonce};
  return content_hash64(words, sizeof words);
}
static_assert(sizeof(ChunkHeader) == 16);

struct RecordHeader {
  uint16_t type;
  uint16_t size;  // bytes, header included, multiple of 8
  uint32_t reserved;
};
static_assert(sizeof(RecordHeader) == 8);

inline constexpr uint64_t kNoStack = 0;
inline constexpr int32_t kHostDevice = -1;
inline constexpr int32_t kUnknownDevice = -2;

}  // namespace cuaudit::trace
