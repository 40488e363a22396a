#include "pickle_writer.h"

namespace cuaudit::report {
namespace {

// pickletools' names.
constexpr char kProto = '\x80', kEmptyDict = '}', kEmptyList = ']', kMark = '(', kSetItems = 'u', kAppends = 'e',
               kTuple2 = '\x86', kBinUnicode = 'X', kBinInt1 = 'K', kBinInt = 'J', kLong1 = '\x8a', kNewTrue = '\x88',
               kNewFalse = '\x89', kNone = 'N', kMemoize = '\x94', kBinGet = 'h', kLongBinGet = 'j', kStop = '.';

}  // namespace

PickleWriter::PickleWriter() {
  out_ += kProto;
  out_ += '\x04';
}

void PickleWriter::little_endian(uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
}

void PickleWriter::begin_dict() {
  out_ += kEmptyDict;
  out_ += kMark;
}

void PickleWriter::end_dict() { out_ += kSetItems; }

void PickleWriter::begin_list() {
  out_ += kEmptyList;
  out_ += kMark;
}

void PickleWriter::end_list() { out_ += kAppends; }

void PickleWriter::tuple2() { out_ += kTuple2; }

void PickleWriter::text(std::string_view s) {
  out_ += kBinUnicode;
  little_endian(s.size(), 4);
  out_.append(s);
}

void PickleWriter::integer(int64_t v) {
  if (v >= 0 && v < 256) {
    out_ += kBinInt1;
    out_ += static_cast<char>(v);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    out_ += kBinInt;
    little_endian(static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
  } else {
    // LONG1: the fewest little-endian two's-complement bytes that keep the sign.
    int bytes = 1;
    while (bytes < 8 && !(v >= -(int64_t{1} << (8 * bytes - 1)) && v < (int64_t{1} << (8 * bytes - 1)))) ++bytes;
    out_ += kLong1;
    out_ += static_cast<char>(bytes);
    little_endian(static_cast<uint64_t>(v), bytes);
  }
}

void PickleWriter::unsigned_integer(uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) return integer(static_cast<int64_t>(v));
  out_ += kLong1;  // nine bytes: the value and a zero byte that keeps it positive
  out_ += '\x09';
  little_endian(v, 8);
  out_ += '\0';
}

void PickleWriter::boolean(bool v) { out_ += v ? kNewTrue : kNewFalse; }

void PickleWriter::none() { out_ += kNone; }

uint32_t PickleWriter::memoize() {
  out_ += kMemoize;
  return memo_count_++;
}

void PickleWriter::recall(uint32_t memo) {
  if (memo < 256) {
    out_ += kBinGet;
    out_ += static_cast<char>(memo);
  } else {
    out_ += kLongBinGet;
    little_endian(memo, 4);
  }
}

std::string PickleWriter::finish() {
  out_ += kStop;
  return std::move(out_);
}

}  // namespace cuaudit::report
