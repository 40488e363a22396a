// `cuaudit snapshot` asks the Python hooks of the processes still running for PyTorch's and JAX's
// files (tool/cli/framework_request.h): a request number in framework-request, answered in
// python-hooks-<pid>.json. This process plays the hooks.
#include <doctest/doctest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "framework_request.h"
#include "python_hooks.h"

using namespace cuaudit;
namespace fs = std::filesystem;

namespace {

std::string hooks_json(bool writes, const std::string& answered) {
  std::ostringstream out;
  out << R"({"format": "cuaudit-python-hooks", "version": 1, "pid": )" << getpid()
      << R"(, "hooks": {"torch": {"state": "attached"}}, "writes": )" << (writes ? "true" : "false");
  if (!answered.empty()) out << R"(, "answered": ")" << answered << '"';
  out << '}';
  return out.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path.string() + ".tmp") << text;
  fs::rename(path.string() + ".tmp", path);
}

std::string read_request(const fs::path& dir) {
  std::ifstream in(dir / "framework-request");
  std::string line;
  std::getline(in, line);
  return line;
}

struct RunDir {
  fs::path path;
  RunDir() {
    char name[] = "/tmp/cuaudit-request-XXXXXX";
    REQUIRE(mkdtemp(name));
    path = name;
  }
  ~RunDir() { fs::remove_all(path); }
  fs::path hooks() const { return path / ("python-hooks-" + std::to_string(getpid()) + ".json"); }
};

}  // namespace

TEST_CASE("the hooks' answer: whether they write while running, and the request they answered") {
  CHECK(python_hooks_answer(hooks_json(true, "17")).writes);
  CHECK(python_hooks_answer(hooks_json(true, "17")).answered == "17");
  CHECK_FALSE(python_hooks_answer(hooks_json(false, "")).writes);
  CHECK_FALSE(python_hooks_answer("not json").writes);  // a file half written elsewhere: no answer
}

TEST_CASE("a snapshot asks the running processes' hooks and waits for their answer") {
  RunDir dir;
  write_file(dir.hooks(), hooks_json(true, ""));
  std::atomic<bool> stop{false};
  std::thread hooks([&] {  // the hooks' thread: answers each new request
    std::string answered;
    while (!stop) {
      const std::string request = read_request(dir.path);
      if (!request.empty() && request != answered) write_file(dir.hooks(), hooks_json(true, answered = request));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  CHECK(ask_framework_files(dir.path.string(), std::chrono::seconds(30)).empty());
  const std::string first = read_request(dir.path);
  CHECK(python_hooks_answer(hooks_json(true, first)).answered == first);
  CHECK(ask_framework_files(dir.path.string(), std::chrono::seconds(30)).empty());
  CHECK(read_request(dir.path) != first);  // each request a new number
  stop = true;
  hooks.join();
}

TEST_CASE("hooks that do not answer are said, and nobody is asked when no process writes such files") {
  RunDir dir;
  write_file(dir.hooks(), hooks_json(true, ""));
  const auto warnings = ask_framework_files(dir.path.string(), std::chrono::milliseconds(100));
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("did not write PyTorch's or JAX's blocks within 0.1 s") != std::string::npos);

  RunDir quiet;
  write_file(quiet.hooks(), hooks_json(false, ""));  // CuPy's hook only: nothing written while running
  write_file(quiet.path / "python-hooks-999999999.json", hooks_json(true, ""));  // a process gone
  CHECK(ask_framework_files(quiet.path.string(), std::chrono::seconds(30)).empty());
  CHECK_FALSE(fs::exists(quiet.path / "framework-request"));
}
