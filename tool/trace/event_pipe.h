// Hands a trace's events from the thread that decodes and merges them to the thread that replays
// them, in batches, so that a report uses both of a small machine's cores: decoding the chunks and
// merging them by sequence number was about a fifth of a long report's time, the replay's table
// and observers the rest (docs/PERFORMANCE.md, "The report at scale"). The events arrive in the
// order they were put in: the report is the same as with one thread.
//
// One producer, one consumer. At most kBatchesInFlight batches wait, so memory stays bounded
// whichever side is faster. Either side's failure stops the other: a producer's exception is
// thrown again to the consumer, and a consumer that stops makes the producer's next put() throw
// PipeClosed, which the producer's thread lets end it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include "trace_model.h"

namespace cuaudit {

class EventPipe {
 public:
  static constexpr size_t kBatchEvents = 4096;
  static constexpr size_t kBatchesInFlight = 8;
  struct PipeClosed {};  // thrown to the producer once the consumer has stopped

  EventPipe() = default;
  // A pipe without a second thread: put() hands each event straight to `direct`.
  explicit EventPipe(const std::function<void(const Event&)>* direct) : direct_(direct) {}

  // Producer: adds an event to the batch being filled (throws PipeClosed after cancel()).
  void put(const Event& e) {
    if (direct_) return (*direct_)(e);
    filling_.push_back(e);
    if (filling_.size() == kBatchEvents) send();
  }
  // Producer: no more events; `failure` (if any) is what the consumer throws once it has the rest.
  void finish(std::exception_ptr failure = nullptr);
  // What the consumer is told of the events ahead of the one it hands on: each event once
  // kFarAhead places ahead (`near` false), then once kNearAhead places ahead (a batch's first
  // events when it starts), for ReplayObserver::prefetch.
  using Lookahead = std::function<void(const Event&, bool near)>;
  static constexpr size_t kFarAhead = 8, kNearAhead = 4;
  // Consumer: hands every event on to `sink` until the producer finishes.
  void drain(const std::function<void(const Event&)>& sink, const Lookahead* ahead = nullptr);
  // Consumer: stops taking events (the producer's next batch throws PipeClosed).
  void cancel();

 private:
  void send();

  const std::function<void(const Event&)>* direct_ = nullptr;
  std::vector<Event> filling_;  // the producer's alone
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<Event>> ready_;
  std::vector<std::vector<Event>> spare_;  // emptied batches, kept for the producer (no allocation a batch)
  bool finished_ = false, cancelled_ = false;
  std::exception_ptr failure_;
};

// Runs `produce` (which puts every event into the pipe) on a thread of its own and hands what it
// puts to `sink` on this one, in order; rethrows what either side threw. Where no thread can be
// started (a process or container limit), both run on this one: the same events, in the same order.
void play_through_pipe(const std::function<void(EventPipe&)>& produce, const std::function<void(const Event&)>& sink,
                       const EventPipe::Lookahead* ahead = nullptr);

}  // namespace cuaudit
