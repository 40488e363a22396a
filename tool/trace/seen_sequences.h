// The sequence numbers a trace's records were read with, as a set of bits: the writer takes them
// from one process-wide counter (injection/event_clock.h), so no two records of one process carry
// the same one, and a record that does repeats one already read (a chunk written again under
// another thread id, a chunk of another trace spliced in).
//
// A process's numbers are dense (every event, sample and device state takes the next one), so the
// set costs a bit per number: 12.5 MB for 100 million events. Numbers spread thinly (a damaged or
// crafted file) would cost a page each: past its page limit the set stops remembering and says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace cuaudit {

class SeenSequences {
 public:
  static constexpr size_t kPageBits = 4096;             // 512 bytes a page
  static constexpr size_t kMaxPages = size_t{1} << 17;  // 64 MiB: 500 million dense numbers

  explicit SeenSequences(size_t max_pages = kMaxPages) : max_pages_(max_pages) {}

  bool contains(uint64_t seq) const {
    const uint64_t* page = find(seq / kPageBits);
    return page && (page[seq % kPageBits / 64] >> (seq % 64) & 1);
  }
  // False once the set is full (it no longer remembers new numbers).
  bool insert(uint64_t seq) {
    uint64_t* page = find_or_add(seq / kPageBits);
    if (!page) return false;
    page[seq % kPageBits / 64] |= uint64_t{1} << (seq % 64);
    return true;
  }
  bool full() const { return full_; }

 private:
  using Page = std::unique_ptr<uint64_t[]>;
  const uint64_t* find(uint64_t number) const {
    if (number == last_number_ && last_) return last_;
    auto it = pages_.find(number);
    return it == pages_.end() ? nullptr : it->second.get();
  }
  uint64_t* find_or_add(uint64_t number) {
    if (number == last_number_ && last_) return last_;
    auto it = pages_.find(number);
    if (it == pages_.end()) {
      if (pages_.size() >= max_pages_) {
        full_ = true;
        return nullptr;
      }
      it = pages_.emplace(number, Page(new uint64_t[kPageBits / 64]())).first;
    }
    last_number_ = number;
    return last_ = it->second.get();
  }

  size_t max_pages_;
  std::unordered_map<uint64_t, Page> pages_;
  uint64_t last_number_ = 0;
  uint64_t* last_ = nullptr;
  bool full_ = false;
};

}  // namespace cuaudit
