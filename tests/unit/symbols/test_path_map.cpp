#include <doctest/doctest.h>

#include <stdexcept>

#include "path_map.h"

using namespace cuaudit;

TEST_CASE("--path-map replaces a whole leading directory, the first match wins") {
  const std::vector<PathMapping> maps = {{"/build/src", "/home/me/src"}, {"/build", "/b"}};
  CHECK(map_path("/build/src/a.cu", maps) == "/home/me/src/a.cu");
  CHECK(map_path("/build/other/b.cu", maps) == "/b/other/b.cu");
  CHECK(map_path("/buildx/c.cu", maps) == "/buildx/c.cu");  // not a directory of /build
  CHECK(map_path("/elsewhere/d.cu", maps) == "/elsewhere/d.cu");
  CHECK(map_path("/build/src/a.cu", {{"/build/src/", "/x/"}}) == "/x/a.cu");
}

TEST_CASE("--strip-path-prefix leaves a relative path") {
  CHECK(map_path("/work/repo/src/a.cu", {{"/work/repo", ""}}) == "src/a.cu");
  CHECK(map_path("/work/repo/src/a.cu", {{"/work/repo/", ""}}) == "src/a.cu");
}

TEST_CASE("--path-map needs OLD=NEW") {
  CHECK(parse_path_mapping("/a=/b").from == "/a");
  CHECK(parse_path_mapping("/a=").to.empty());
  CHECK_THROWS_AS(parse_path_mapping("/a"), std::invalid_argument);
  CHECK_THROWS_AS(parse_path_mapping("=/b"), std::invalid_argument);
}

TEST_CASE("every stack of the report is mapped") {
  report::Report r;
  report::Finding f;
  report::Frame frame;
  frame.file = "/build/a.cu";
  f.stack = {frame};
  f.related.push_back({report::RelatedRole::Allocation, "cudaMalloc", "allocated at:", {frame}});
  r.findings.push_back(f);
  report::DevicePeak peak;
  peak.sites.push_back({"cudaMalloc", 1, 1, {frame}});
  r.timeline.peaks.push_back(peak);
  map_report_paths(r, {{"/build", "/src"}});
  CHECK(r.findings[0].stack[0].file == "/src/a.cu");
  CHECK(r.findings[0].related[0].stack[0].file == "/src/a.cu");
  CHECK(r.timeline.peaks[0].sites[0].stack[0].file == "/src/a.cu");
}
