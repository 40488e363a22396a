// The compact form of an allocation or release event (trace version 3): what a thread's event has
// in common with the one before it is left out. A long-running program makes millions of events
// that differ from the previous one in little more than their time (the same thread, stack, size,
// context, often the same pointer), so most come out at 16 bytes instead of 72.
//
// Layout: a RecordHeader whose `reserved` word holds the API (bits 0-15) and the flags below (bits
// 16-23), then LEB128 varints (and a raw 8-byte stack id), padded to 8 bytes:
//   seq - previous seq, time_ns - previous time_ns   (unsigned: a thread's events only go forward)
//   key - previous key                               (zigzag: either way)
//   [bytes]            unless kSameBytes
//   [stack id, 8 raw]  when the stack mode is kStackExplicit
//   [context_uid, device (zigzag)]  unless kSameContext
//   [result (zigzag)]  when kHasResult
//   [call_ns]          when kHasCallNs
// "Previous" is the previous compact event of the same thread's buffer. A record with kAbsolute
// starts afresh (previous values all zero): the writer sets it on the first event of each chunk it
// fills, so a chunk decodes on its own. A reader keeps the state per thread id across chunks in
// file order, which also covers a chunk a signal handler cut in two.
// The event's thread is the chunk's. An event that cannot be said this way (time going back on the
// thread, another thread's id) is written as a full Alloc/Free record instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "trace_format.h"

namespace cuaudit::trace {

inline constexpr uint8_t kCompactAlloc = 1 << 0;     // an allocation; else a release
inline constexpr uint8_t kCompactAbsolute = 1 << 1;  // no previous event: deltas from zero
inline constexpr uint8_t kCompactStackShift = 2;     // 2 bits: CompactStack
inline constexpr uint8_t kCompactSameBytes = 1 << 4;
inline constexpr uint8_t kCompactSameContext = 1 << 5;  // context_uid and device as the previous event
inline constexpr uint8_t kCompactHasResult = 1 << 6;
inline constexpr uint8_t kCompactHasCallNs = 1 << 7;

enum class CompactStack : uint8_t {
  Explicit = 0,      // the id follows
  SamePrevious = 1,  // as the previous event
  SameKind = 2,      // as the previous event of the same kind (allocation or release)
};

// The largest compact record, padding included: header, seq, time, key, bytes, stack, context,
// device, result, call_ns, each at its widest.
inline constexpr size_t kMaxCompactEventBytes = padded_record_size(8 + 10 * 4 + 8 + 5 + 10 + 5 + 5);

// What the previous event of a thread left behind (both sides keep one per thread).
struct CompactEventState {
  bool valid = false;
  uint64_t seq = 0, time_ns = 0, key = 0, stack_id = 0;
  uint64_t kind_stack[2] = {0, 0};  // [release, allocation]
  uint64_t kind_bytes[2] = {0, 0};
  uint32_t context_uid = 0;
  int32_t device = 0;
};

namespace compact_detail {

inline size_t put_varint(uint8_t* out, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    out[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  out[n++] = static_cast<uint8_t>(v);
  return n;
}

inline bool get_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// What the next event of the thread is said relative to (`kind`: 1 an allocation, 0 a release).
inline void remember(CompactEventState& state, unsigned kind, const ApiEventRecord& r) {
  state.valid = true;
  state.seq = r.seq;
  state.time_ns = r.time_ns;
  state.key = r.key;
  state.stack_id = r.stack_id;
  state.kind_stack[kind] = r.stack_id;
  state.kind_bytes[kind] = r.bytes;
  state.context_uid = r.context_uid;
  state.device = r.device;
}

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

}  // namespace compact_detail

// Encodes `r` (an allocation when `alloc`) after `state` into `out` (kMaxCompactEventBytes at
// least) and returns the record's padded size; 0 when it must be written as a full record. `state`
// moves on only when it returns non-zero.
inline size_t encode_compact_event(CompactEventState& state, bool alloc, const ApiEventRecord& r,
                                   uint8_t* out) noexcept {
  using namespace compact_detail;
  CompactEventState s = state.valid ? state : CompactEventState{};
  if (r.seq < s.seq || r.time_ns < s.time_ns) return 0;
  const unsigned kind = alloc ? 1 : 0;
  uint8_t flags = alloc ? kCompactAlloc : 0;
  if (!state.valid) flags |= kCompactAbsolute;
  size_t n = 8;
  n += put_varint(out + n, r.seq - s.seq);
  n += put_varint(out + n, r.time_ns - s.time_ns);
  n += put_varint(out + n, zigzag(static_cast<int64_t>(r.key - s.key)));
  if (state.valid && r.bytes == s.kind_bytes[kind]) {
    flags |= kCompactSameBytes;
  } else {
    n += put_varint(out + n, r.bytes);
  }
  CompactStack stack = CompactStack::Explicit;
  if (state.valid && r.stack_id == s.stack_id) {
    stack = CompactStack::SamePrevious;
  } else if (state.valid && r.stack_id == s.kind_stack[kind]) {
    stack = CompactStack::SameKind;
  } else {
    memcpy(out + n, &r.stack_id, 8);
    n += 8;
  }
  flags |= static_cast<uint8_t>(static_cast<uint8_t>(stack) << kCompactStackShift);
  if (state.valid && r.context_uid == s.context_uid && r.device == s.device) {
    flags |= kCompactSameContext;
  } else {
    n += put_varint(out + n, r.context_uid);
    n += put_varint(out + n, zigzag(r.device));
  }
  if (r.result != 0) {
    flags |= kCompactHasResult;
    n += put_varint(out + n, zigzag(r.result));
  }
  if (r.call_ns != 0) {
    flags |= kCompactHasCallNs;
    n += put_varint(out + n, r.call_ns);
  }
  const size_t padded = padded_record_size(n);
  memset(out + n, 0, padded - n);
  RecordHeader h{static_cast<uint16_t>(RecordType::CompactEvent), static_cast<uint16_t>(padded),
                 static_cast<uint32_t>(r.api) | static_cast<uint32_t>(flags) << 16};
  memcpy(out, &h, sizeof h);

  compact_detail::remember(state, kind, r);
  return padded;
}

// Decodes one compact record (its header `h`, then `body_bytes` at `body`) of a chunk of thread
// `tid`, after `state`. False when it is malformed, or is relative to a previous event this reader
// never saw (a chunk before it was damaged or lost): the caller counts it as damage.
inline bool decode_compact_event(CompactEventState& state, const RecordHeader& h, const void* body, size_t body_bytes,
                                 uint32_t tid, ApiEventRecord& out, bool& alloc) noexcept {
  using namespace compact_detail;
  const uint8_t flags = static_cast<uint8_t>(h.reserved >> 16);
  if (flags & kCompactAbsolute) {
    state = CompactEventState{};
  } else if (!state.valid) {
    return false;
  }
  const auto* in = static_cast<const uint8_t*>(body);
  const auto* end = in + body_bytes;
  alloc = flags & kCompactAlloc;
  const unsigned kind = alloc ? 1 : 0;
  out = ApiEventRecord{};
  out.api = static_cast<uint16_t>(h.reserved & 0xffff);
  out.tid = tid;
  uint64_t v;
  if (!get_varint(in, end, v)) return false;
  out.seq = state.seq + v;
  if (!get_varint(in, end, v)) return false;
  out.time_ns = state.time_ns + v;
  if (!get_varint(in, end, v)) return false;
  out.key = state.key + static_cast<uint64_t>(unzigzag(v));
  if (flags & kCompactSameBytes) {
    out.bytes = state.kind_bytes[kind];
  } else if (!get_varint(in, end, out.bytes)) {
    return false;
  }
  switch (static_cast<CompactStack>((flags >> kCompactStackShift) & 3)) {
    case CompactStack::Explicit:
      if (end - in < 8) return false;
      memcpy(&out.stack_id, in, 8);
      in += 8;
      break;
    case CompactStack::SamePrevious:
      out.stack_id = state.stack_id;
      break;
    case CompactStack::SameKind:
      out.stack_id = state.kind_stack[kind];
      break;
    default:
      return false;
  }
  if (flags & kCompactSameContext) {
    out.context_uid = state.context_uid;
    out.device = state.device;
  } else {
    if (!get_varint(in, end, v)) return false;
    out.context_uid = static_cast<uint32_t>(v);
    if (!get_varint(in, end, v)) return false;
    out.device = static_cast<int32_t>(unzigzag(v));
  }
  if (flags & kCompactHasResult) {
    if (!get_varint(in, end, v)) return false;
    out.result = static_cast<int32_t>(unzigzag(v));
  }
  if (flags & kCompactHasCallNs) {
    if (!get_varint(in, end, v)) return false;
    out.call_ns = static_cast<uint32_t>(v);
  }
  remember(state, kind, out);
  return true;
}

}  // namespace cuaudit::trace
