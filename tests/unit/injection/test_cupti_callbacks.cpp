// The injection's table of CUDA callbacks (injection/cupti_callbacks.inc) and the routes on_api
// reads from it: each callback once, each recorded one under an API of its own name, and the
// roles a run without --track-resources keeps.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <utility>

#include "api_table.h"
#include "cupti_callback_table.h"

using namespace cuaudit;
using namespace cuaudit::inject;

namespace {

struct NamedRow {
  const char* cbid;
  bool recorded;  // written with CUAUDIT_CALLBACK
};

#define CUAUDIT_CALLBACK(domain, cbid, api, roles) {#cbid, true},
#define CUAUDIT_HOOK(domain, cbid, roles) {#cbid, false},
const NamedRow kNamed[] = {
#include "cupti_callbacks.inc"
};
#undef CUAUDIT_CALLBACK
#undef CUAUDIT_HOOK

}  // namespace

TEST_CASE("every callback appears once, a recorded one carries Tracked or Resource, a hook neither") {
  using namespace callback_role;
  REQUIRE(callback_row_count() == sizeof kNamed / sizeof kNamed[0]);
  std::set<std::pair<int, unsigned>> seen;
  for (size_t i = 0; i < callback_row_count(); ++i) {
    const CallbackRow& row = callback_rows()[i];
    INFO(kNamed[i].cbid);
    CHECK(seen.insert({row.domain, row.cbid}).second);
    CHECK(row.roles != 0);
    const bool recorded = (row.roles & (Tracked | Resource)) != 0;
    CHECK(recorded == kNamed[i].recorded);
    CHECK((row.api != kNoApi) == recorded);
    CHECK((row.domain == CUPTI_CB_DOMAIN_RUNTIME_API || row.domain == CUPTI_CB_DOMAIN_DRIVER_API));
    // Launch, NodeAdd and LastError are runtime calls; DriverLaunch driver calls.
    if (row.roles & (Launch | NodeAdd | LastError)) CHECK(row.domain == CUPTI_CB_DOMAIN_RUNTIME_API);
    if (row.roles & DriverLaunch) CHECK(row.domain == CUPTI_CB_DOMAIN_DRIVER_API);
  }
}

TEST_CASE("a recorded callback is recorded under the API its id names (versions and variants aside)") {
  // The variants recorded as the API they load, as reports name it.
  const std::set<std::string> aliases = {"cuModuleLoadFatBinary"};
  for (size_t i = 0; i < callback_row_count(); ++i) {
    if (!kNamed[i].recorded) continue;
    const std::string cbid = kNamed[i].cbid;
    const std::string api(api_info(static_cast<Api>(callback_rows()[i].api)).name);
    INFO(cbid << " -> " << api);
    CHECK((cbid.compare(0, api.size(), api) == 0 || aliases.count(cbid) == 1));
  }
}

TEST_CASE("routes: tracked calls always, resources only with --track-resources, hooks either way") {
  using namespace callback_role;
  build_callback_routes(false);
  const CallbackRoute malloc_route =
      callback_route(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
  CHECK(malloc_route.api == static_cast<int16_t>(Api::cudaMalloc));
  CHECK(malloc_route.has(Tracked));
  // (cuda.h makes cuMemFree a macro: the API is named by its name.)
  const int16_t mem_free = callback_route(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2).api;
  REQUIRE(mem_free != kNoApi);
  CHECK(api_info(static_cast<Api>(mem_free)).name == "cuMemFree");
  CHECK(callback_route(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020).api == kNoApi);
  // A resource that is also a hook keeps its hooks' roles and loses its API.
  CallbackRoute clone = callback_route(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphClone);
  CHECK(clone.api == kNoApi);
  CHECK(clone.roles == (NodeCopy | GraphMemory));
  const CallbackRoute launch =
      callback_route(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  CHECK(launch.api == kNoApi);
  CHECK(launch.roles == Launch);
  CHECK(callback_route(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020).has(LastError));
  // An id no row names routes nowhere, and so does one past the table or in another domain.
  CHECK(callback_route(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020).roles == 0);
  CHECK(callback_route(CUPTI_CB_DOMAIN_DRIVER_API, 100000).roles == 0);
  CHECK(callback_route(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020).roles == 0);

  build_callback_routes(true);
  CHECK(callback_route(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020).api ==
        static_cast<int16_t>(Api::cudaStreamCreate));
  clone = callback_route(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphClone);
  CHECK(clone.api == static_cast<int16_t>(Api::cuGraphClone));
  CHECK(clone.roles == (Resource | NodeCopy | GraphMemory));
  build_callback_routes(false);
}
