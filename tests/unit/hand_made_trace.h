// Trace files built byte by byte (common/trace_format.h), for the tests of the reader: what a
// writer might have made, or what damage or a crafted file makes of it.
#pragma once

#include <cstring>
#include <string>

#include "api_table.h"
#include "trace_format.h"

namespace cuaudit::testing {

template <typename T>
void put(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

inline constexpr uint64_t kNonce = 0x5eed;  // every hand-made file's identity (version 7 on)

inline std::string file_header(uint32_t version = trace::kTraceVersion, uint64_t pid = 77) {
  trace::FileStart start = trace::file_start(pid, kNonce);
  start.header.version = version;
  start.header.header_size = trace::file_header_size(version);
  std::string out;
  put(out, start);
  out.resize(start.header.header_size);
  return out;
}

// A chunk of thread `tid` in a file of `pid` and `version` (its checksum sealed as that writer did).
inline std::string chunk(const std::string& payload, uint32_t tid = 1, uint64_t pid = 77,
                         uint32_t version = trace::kTraceVersion) {
  std::string out;
  const uint64_t seal = trace::chunk_seal(version, pid, kNonce, tid);
  put(out, trace::ChunkHeader{trace::kChunkMagic, static_cast<uint32_t>(payload.size()), tid,
                              trace::chunk_checksum(payload.data(), payload.size(), seal)});
  return out + payload;
}

inline std::string process_record(uint64_t pid = 77, uint64_t start_monotonic_ns = 0) {
  trace::ProcessInfoRecord r{};
  r.header = trace::header_for<trace::ProcessInfoRecord>(sizeof r);
  r.pid = pid;
  r.start_monotonic_ns = start_monotonic_ns;
  r.start_realtime_ns = 1'700'000'000'000'000'000ull + start_monotonic_ns;
  std::string out;
  put(out, r);
  return out;
}

// The file header and the chunk with the process record that every trace starts with.
inline std::string header(uint32_t version = trace::kTraceVersion) {
  return file_header(version) + chunk(process_record(), 1, 77, version);
}

inline std::string alloc_record(uint64_t seq, uint64_t key, uint64_t time_ns = 0) {
  trace::AllocRecord r{};
  r.header = trace::header_for<trace::AllocRecord>(sizeof r);
  r.seq = seq;
  r.time_ns = time_ns;
  r.key = key;
  r.bytes = 8;
  r.api = static_cast<uint16_t>(Api::cudaMalloc);
  std::string out;
  put(out, r);
  return out;
}

}  // namespace cuaudit::testing
