// A Python pickle of dicts, lists, strings, integers, booleans and None, in protocol 4 without
// frames: what PyTorch's memory snapshots are, and the opcodes its memory visualizer's own reader
// (torch/utils/viz/MemoryViz.js) knows; Python's pickle reads it as any pickle. Opcodes as
// documented in CPython's Lib/pickletools.py.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cuaudit::report {

class PickleWriter {
 public:
  PickleWriter();  // the protocol opcode

  // A dict: begin, then key/value pairs (each a key() and one value), then end.
  void begin_dict();
  void end_dict();
  void key(std::string_view k) { text(k); }
  // A list: begin, its items, end.
  void begin_list();
  void end_list();
  // The two values before it as a tuple.
  void tuple2();

  void text(std::string_view s);  // str (UTF-8)
  void integer(int64_t v);
  void unsigned_integer(uint64_t v);
  void boolean(bool v);
  void none();

  // The value just written, kept for `recall` (the memo); returns its number.
  uint32_t memoize();
  void recall(uint32_t memo);

  // The pickle, closed by STOP.
  std::string finish();

 private:
  void little_endian(uint64_t v, int bytes);
  std::string out_;
  uint32_t memo_count_ = 0;
};

}  // namespace cuaudit::report
