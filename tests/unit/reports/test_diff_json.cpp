// `cuaudit diff --json`: the comparison's document from two report models (the command itself is
// tested end to end by tests/cli/check_baseline.py).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "diff_json.h"

using namespace cuaudit::report;

TEST_CASE("the diff document sorts findings by their baseline status and signs each peak change") {
  Report before, after;
  Finding known, fresh, hidden;
  known.kind = fresh.kind = hidden.kind = FindingKind::Leak;
  known.api = "cudaMallocHost";
  known.baseline = BaselineStatus::StillPresent;
  fresh.api = "cudaMalloc";
  fresh.baseline = BaselineStatus::New;
  hidden.api = "cudaMallocManaged";
  hidden.suppressed = true;
  after.findings = {known, fresh, hidden};
  after.baseline = BaselineResult{"old.json", 1, 1, {"leak cudaMalloc at old_bug (app.cu)"}};
  after.incomplete = true;
  DevicePeakChange peak;
  peak.device = 1;
  peak.used_before = 3000, peak.used_after = 1000;
  peak.tracked_before = 100, peak.tracked_after = 300;
  peak.sites = {{"cudaMalloc", "upload app.cu:28", 0, 200}, {"cudaMalloc", "train.py:19", 2000, 0}};
  const nlohmann::json d = nlohmann::json::parse(render_diff_json(before, after, {peak}, "old.json", "new.json"));
  CHECK(d["schema"] == "cuaudit.diff.v1");
  CHECK(d["before"]["report"] == "old.json");
  CHECK(d["before"]["incomplete"] == false);
  CHECK(d["after"]["incomplete"] == true);
  REQUIRE(d["new"].size() == 1);
  CHECK(d["new"][0]["api"] == "cudaMalloc");
  REQUIRE(d["still_present"].size() == 1);  // the suppressed one in neither
  CHECK(d["still_present"][0]["api"] == "cudaMallocHost");
  CHECK(d["fixed"] == nlohmann::json::array({"leak cudaMalloc at old_bug (app.cu)"}));
  REQUIRE(d["peaks"].size() == 1);
  CHECK(d["peaks"][0]["device"] == 1);
  CHECK(d["peaks"][0]["used_change"] == -2000);
  CHECK(d["peaks"][0]["tracked_change"] == 200);
  CHECK(d["peaks"][0]["sites"][0]["change"] == 200);
  CHECK(d["peaks"][0]["sites"][1]["change"] == -2000);
  CHECK(d["peaks"][0]["sites"][1]["site"] == "train.py:19");
}

TEST_CASE("a diff without a baseline or a timeline is still a whole document") {
  const nlohmann::json d = nlohmann::json::parse(render_diff_json(Report{}, Report{}, {}, "a.json", "b.json"));
  CHECK(d["new"].empty());
  CHECK(d["still_present"].empty());
  CHECK(d["fixed"].is_array());
  CHECK(d["peaks"].is_array());
}
