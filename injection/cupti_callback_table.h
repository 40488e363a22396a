// What each CUDA callback is for, from the one list in cupti_callbacks.inc: the rows, and the dense
// routing table on_api (cupti_subscriber.cpp) reads once per callback instead of asking a chain of
// predicates. Part of the CUPTI seam; pure data, no CUPTI calls (unit-tested without a GPU).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

namespace cuaudit::inject {

// The roles of cupti_callbacks.inc, as bits: one callback can play several (cudaGraphClone is a
// resource, copies graph nodes and changes graph memory).
namespace callback_role {
enum : uint16_t {
  Tracked = 1u << 0,
  Resource = 1u << 1,
  Launch = 1u << 2,
  NodeAdd = 1u << 3,
  NodeCopy = 1u << 4,
  DriverLaunch = 1u << 5,
  KernelHandle = 1u << 6,
  GraphMemory = 1u << 7,
  Peer = 1u << 8,
  Export = 1u << 9,
  LastError = 1u << 10,
};
// The roles the launch checks need (--check-launch-params).
constexpr uint16_t kLaunchHooks = Launch | NodeAdd | NodeCopy | DriverLaunch | KernelHandle | Peer;
}  // namespace callback_role

constexpr int16_t kNoApi = -1;

// One row of cupti_callbacks.inc.
struct CallbackRow {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  int16_t api;  // an Api value, or kNoApi
  uint16_t roles;
};

// Every row, in the list's order.
const CallbackRow* callback_rows() noexcept;
size_t callback_row_count() noexcept;

// What a callback is for: the Api it is recorded as (kNoApi: none) and its roles.
struct CallbackRoute {
  int16_t api = kNoApi;
  uint16_t roles = 0;
  bool has(uint16_t role) const noexcept { return (roles & role) != 0; }
};

// The dense table, one slot per (runtime or driver, callback id): filled once before subscribing.
// Without --track-resources a Resource row routes as the hooks it also plays, with no Api.
void build_callback_routes(bool track_resources) noexcept;

// Inline: every callback looks its route up first.
constexpr CUpti_CallbackId kMaxCbid = 1024;
struct CallbackRoutes {
  CallbackRoute runtime[kMaxCbid];
  CallbackRoute driver[kMaxCbid];
};
extern CallbackRoutes g_routes;
inline CallbackRoute callback_route(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept {
  if (cbid >= kMaxCbid) return {};
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return g_routes.runtime[cbid];
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return g_routes.driver[cbid];
  return {};
}

}  // namespace cuaudit::inject
