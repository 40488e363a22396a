#include "cupti_callback_table.h"

#include "call_recorder.h"

namespace cuaudit::inject {
namespace {

using namespace callback_role;

// Api values by pasted name: cuda.h #defines many API names (cuMemAlloc is cuMemAlloc_v2), and a
// pasted token is not expanded. Same list, same order: the same values as the Api enum.
enum ApiByName : int16_t {
#define CUAUDIT_API(id, name, role, family, space) kApi_##id,
#include "api_list.inc"
#undef CUAUDIT_API
  kApiByNameCount
};
static_assert(kApiByNameCount == kCudaApis, "api_list.inc read twice differently");

#define CUAUDIT_CALLBACK(domain, cbid, api, roles) \
  {CUPTI_CB_DOMAIN_##domain##_API, CUPTI_##domain##_TRACE_CBID_##cbid, kApi_##api, roles},
#define CUAUDIT_HOOK(domain, cbid, roles) \
  {CUPTI_CB_DOMAIN_##domain##_API, CUPTI_##domain##_TRACE_CBID_##cbid, kNoApi, roles},
constexpr CallbackRow kRows[] = {
#include "cupti_callbacks.inc"
};
#undef CUAUDIT_CALLBACK
#undef CUAUDIT_HOOK

// Every callback id CUPTI 13 defines fits (807 driver, 523 runtime); a later CUPTI's new ids route
// nowhere until the table grows.
static_assert(CUPTI_RUNTIME_TRACE_CBID_SIZE <= kMaxCbid && CUPTI_DRIVER_TRACE_CBID_SIZE <= kMaxCbid,
              "a callback id of this CUPTI does not fit the routing table");

}  // namespace

const CallbackRow* callback_rows() noexcept { return kRows; }
size_t callback_row_count() noexcept { return sizeof kRows / sizeof kRows[0]; }

CallbackRoutes g_routes;

void build_callback_routes(bool track_resources) noexcept {
  g_routes = CallbackRoutes{};
  for (const CallbackRow& row : kRows) {
    CallbackRoute& route = (row.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? g_routes.runtime : g_routes.driver)[row.cbid];
    const bool recorded = (row.roles & Tracked) || (track_resources && (row.roles & Resource));
    route.api = recorded ? row.api : kNoApi;
    route.roles = recorded ? row.roles : static_cast<uint16_t>(row.roles & ~(Tracked | Resource));
  }
}

}  // namespace cuaudit::inject
