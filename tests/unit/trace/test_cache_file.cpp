// A run's cache files (tool/trace/cache_file.h) as received from elsewhere: anything that is not
// the named schema is refused with a message, never thrown out of the reader.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <fstream>

#include "cache_file.h"
#include "run_dir.h"

using namespace cuaudit;

TEST_CASE("a cache whose schema is not a string is refused, not thrown (found by fuzz_run_dir)") {
  char dir[] = "/tmp/cuaudit-cache-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/call_sites.json";
  for (const char* text : {R"({"schema": null})", R"({"schema": 7})", R"([1, 2])", R"({"other": "x"})"}) {
    CAPTURE(text);
    std::ofstream(path) << text;
    std::optional<nlohmann::json> doc;
    std::string error;
    CHECK_FALSE(read_cache_document(path, "cuaudit.call-sites.v1", "call-site cache", doc, error));
    CHECK(error.find("is not a cuaudit call-site cache") != std::string::npos);
    CHECK_FALSE(doc.has_value());
  }
  std::ofstream(path) << R"({"schema": "cuaudit.call-sites.v1"})";
  std::optional<nlohmann::json> doc;
  std::string error;
  CHECK(read_cache_document(path, "cuaudit.call-sites.v1", "call-site cache", doc, error));
  CHECK(doc.has_value());
  remove_run_dir(dir);
}
