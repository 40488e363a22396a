// The pipe between the thread that decodes a trace and the one that replays it (event_pipe.h):
// every event once, in order; what is ahead announced before it comes; a failure on either side
// reaches the caller and stops the other side.
#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "event_pipe.h"

using namespace cuaudit;

namespace {

Event numbered(uint64_t seq) {
  Event e;
  e.kind = EventKind::Alloc;
  MemoryEvent m;
  m.seq = seq;
  e.seq = seq;
  e.payload = m;
  return e;
}

}  // namespace

TEST_CASE("event pipe: every event once and in order, past the batches in flight") {
  // More events than the pipe holds at once: the producer waits for the consumer.
  const uint64_t n = EventPipe::kBatchEvents * (EventPipe::kBatchesInFlight + 3) + 17;
  std::vector<uint64_t> seen;
  play_through_pipe(
      [&](EventPipe& pipe) {
        for (uint64_t i = 0; i < n; ++i) pipe.put(numbered(i));
      },
      [&](const Event& e) { seen.push_back(e.seq); });
  REQUIRE(seen.size() == n);
  for (uint64_t i = 0; i < n; ++i) REQUIRE(seen[i] == i);
}

TEST_CASE("event pipe: an event is announced far, then near, before it is handed on") {
  const uint64_t n = EventPipe::kBatchEvents + 100;
  std::vector<int> far(n, 0), near(n, 0);
  uint64_t next = 0;
  const EventPipe::Lookahead ahead = [&](const Event& e, bool is_near) {
    REQUIRE(e.seq >= next);  // never an event already handed on
    (is_near ? near : far)[e.seq]++;
    if (is_near) CHECK(far[e.seq] == 1);
  };
  play_through_pipe(
      [&](EventPipe& pipe) {
        for (uint64_t i = 0; i < n; ++i) pipe.put(numbered(i));
      },
      [&](const Event& e) { next = e.seq + 1; }, &ahead);
  CHECK(next == n);
  for (uint64_t i = 0; i < n; ++i) {  // a batch's first events too, and the last batch's
    REQUIRE(far[i] == 1);
    REQUIRE(near[i] == 1);
  }
}

TEST_CASE("event pipe: the producer's failure reaches the caller after what it put before") {
  std::vector<uint64_t> seen;
  CHECK_THROWS_WITH(play_through_pipe(
                        [](EventPipe& pipe) {
                          for (uint64_t i = 0; i < 10; ++i) pipe.put(numbered(i));
                          throw std::runtime_error("the trace broke");
                        },
                        [&](const Event& e) { seen.push_back(e.seq); }),
                    "the trace broke");
  CHECK(seen.size() == 10);  // the batch being filled when it failed is handed on first
}

TEST_CASE("event pipe: a failing consumer stops the producer") {
  std::atomic<uint64_t> put{0};
  CHECK_THROWS_WITH(play_through_pipe(
                        [&](EventPipe& pipe) {
                          for (;;) {  // would never end by itself
                            pipe.put(numbered(put));
                            ++put;
                          }
                        },
                        [](const Event& e) {
                          if (e.seq == 5) throw std::runtime_error("replay failed");
                        }),
                    "replay failed");
  CHECK(put < EventPipe::kBatchEvents * (EventPipe::kBatchesInFlight + 3));
}

TEST_CASE("event pipe: without a second thread, put() hands each event straight on") {
  std::vector<uint64_t> seen;
  const std::function<void(const Event&)> sink = [&](const Event& e) { seen.push_back(e.seq); };
  EventPipe direct(&sink);
  direct.put(numbered(1));
  CHECK(seen == std::vector<uint64_t>{1});  // at once, not when a batch fills
  direct.put(numbered(2));
  CHECK(seen == std::vector<uint64_t>{1, 2});
}
