#include "event_pipe.h"

#include <algorithm>
#include <system_error>
#include <thread>

namespace cuaudit {

void EventPipe::send() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return cancelled_ || ready_.size() < kBatchesInFlight; });
  if (cancelled_) throw PipeClosed{};
  ready_.push_back(std::move(filling_));
  filling_.clear();
  if (!spare_.empty()) {
    filling_.swap(spare_.back());
    spare_.pop_back();
  }
  changed_.notify_all();
}

void EventPipe::finish(std::exception_ptr failure) {
  if (!filling_.empty()) {  // a failing producer's last events too: what was read is replayed
    try {
      send();
    } catch (const PipeClosed&) {
      // nobody takes it: the consumer stopped first
    }
  }
  std::lock_guard lock(mutex_);
  finished_ = true;
  failure_ = failure;
  changed_.notify_all();
}

void EventPipe::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = true;
  ready_.clear();
  changed_.notify_all();
}

void EventPipe::drain(const std::function<void(const Event&)>& sink, const Lookahead* ahead) {
  for (;;) {
    std::vector<Event> batch;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return finished_ || !ready_.empty(); });
      if (ready_.empty()) {  // finished, and everything handed on
        if (failure_) std::rethrow_exception(failure_);
        return;
      }
      batch = std::move(ready_.front());
      ready_.pop_front();
      changed_.notify_all();
    }
    if (ahead) {  // the batch's first events, which no earlier event announced
      for (size_t i = 0; i < std::min(kFarAhead, batch.size()); ++i) (*ahead)(batch[i], false);
      for (size_t i = 0; i < std::min(kNearAhead, batch.size()); ++i) (*ahead)(batch[i], true);
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      if (ahead) {
        if (i + kFarAhead < batch.size()) (*ahead)(batch[i + kFarAhead], false);
        if (i + kNearAhead < batch.size()) (*ahead)(batch[i + kNearAhead], true);
      }
      sink(batch[i]);
    }
    batch.clear();
    std::lock_guard lock(mutex_);
    spare_.push_back(std::move(batch));
  }
}

void play_through_pipe(const std::function<void(EventPipe&)>& produce, const std::function<void(const Event&)>& sink,
                       const EventPipe::Lookahead* ahead) {
  EventPipe pipe;
  std::thread producer;
  try {
    producer = std::thread([&] {
      try {
        produce(pipe);
        pipe.finish();
      } catch (const EventPipe::PipeClosed&) {
        pipe.finish();
      } catch (...) {
        pipe.finish(std::current_exception());
      }
    });
  } catch (const std::system_error&) {
    EventPipe direct(&sink);
    produce(direct);
    return;
  }
  try {
    pipe.drain(sink, ahead);
  } catch (...) {
    pipe.cancel();
    producer.join();
    throw;
  }
  producer.join();
}

}  // namespace cuaudit
