// Whether a launch's pointer value is memory the launching device can reach: the driver's answer
// (cuPointerGetAttributes), cached per thread until memory is allocated or released anywhere, and,
// in processes with several devices, whether peer access or access rights let the launching device
// reach another device's memory. The launch checker's questions (launch_checker.cpp); no lock, and
// no CUDA call when the caches answer.
#pragma once

#include <cstdint>

namespace cuaudit::inject {

// The driver's answer for one pointer value.
struct Reachability {
  bool reachable;
  uint64_t start, end;  // the allocation's range when reachable
  int32_t result;
  uint8_t memory_type;
  bool host_readable;
};

// The driver's verdict on `value` when it is not reachable memory (null when it is), from this
// thread's cache when nothing changed since it was asked.
const Reachability* unreachable(uint64_t value) noexcept;

// The process has contexts on more than one device (only then is peer access asked about).
bool several_devices() noexcept;

// Whether the device running the kernel (`launch_device`) may not access the memory at `value`,
// which the driver already confirmed is reachable memory; `owner`: the device it is on.
bool peer_denied(uint64_t value, int8_t launch_device, int8_t& owner) noexcept;

// The device of the calling thread's current context: the one the launch runs on.
int8_t current_device() noexcept;

// A context on `device` exists: once a process uses two devices, pointers into another device's
// memory are checked for access from the launching device (peer access, VMM access rights).
void launch_checks_context_created(int32_t device) noexcept;

// Peer access from `from` to `to` was enabled (or disabled) by the program: a pointer into `to`'s
// memory is then fine for kernels on `from`, whatever the driver's access flags say.
void note_peer_access(int32_t from, int32_t to, bool enabled) noexcept;

// CUAUDIT_STATS=1: the driver's pointer queries so far, and those that named no range.
uint64_t driver_pointer_queries() noexcept;
uint64_t single_address_ranges() noexcept;

}  // namespace cuaudit::inject
