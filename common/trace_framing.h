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
// followed by a TraceClosed chunk (a file cut after its end record is known). Versions 1 to 5 are
// still read.
inline constexpr uint32_t kTraceVersion = 6;
inline constexpr uint32_t kFirstClosedVersion = 6;
inline constexpr uint32_t kOldestReadableVersion = 1;
inline constexpr uint32_t kChunkMagic = 0x4b4e4843;  // "CHNK"
inline constexpr size_t kMaxStackDepth = 64;
inline constexpr size_t kMaxBuildIdBytes = 32;
inline constexpr size_t kMaxRecordBytes = 0xfff8;  // RecordHeader::size is 16 bits

struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;  // sizeof(FileHeader) of the writer
  uint64_t pid;
};
static_assert(sizeof(FileHeader) == 24);

struct ChunkHeader {
  uint32_t magic;
  uint32_t payload_bytes;
  uint32_t tid;
  uint32_t checksum;  // chunk_checksum of the payload (version 2 on; 0 in version 1)
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
inline uint32_t chunk_checksum(const void* data, size_t bytes) {
  const uint64_t h = content_hash64(data, bytes);
  return static_cast<uint32_t>(h ^ (h >> 32));
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
