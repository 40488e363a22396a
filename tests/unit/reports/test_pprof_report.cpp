// --pprof: the profile message decoded with protobuf's own reader (the consumer test with `go tool
// pprof` is tests/reports/check_pprof.py), and which frames a profile shows of a Python program.
#include <doctest/doctest.h>
#include <zlib.h>

#include <map>
#include <string>

#include "pprof_report.h"
#include "profile.pb.h"
#include "profile_stacks.h"

using namespace cuaudit::report;
namespace pb = perftools::profiles;

namespace {

Frame native(uint64_t pc, const std::string& function, const std::string& module, uint64_t offset, int line = 0) {
  Frame f;
  f.pc = pc;
  f.function = function;
  f.module = module;
  f.module_offset = offset;
  f.line = line;
  f.file = line ? "app.cu" : "";
  return f;
}

Frame python(const std::string& file, int line, const std::string& function) {
  Frame f;
  f.function = function;
  f.file = file;
  f.line = line;
  f.module = "python";
  return f;
}

ProfileSite site(int device, const std::string& api, std::vector<Frame> stack, uint64_t live, uint64_t peak) {
  ProfileSite s;
  s.pid = 42;
  s.device = device;
  s.api = api;
  s.stack = std::move(stack);
  s.allocated_count = 3;
  s.allocated_bytes = 3 * 4096;
  s.live_count = live / 4096;
  s.live_bytes = live;
  s.peak_count = peak / 4096;
  s.peak_bytes = peak;
  return s;
}

Report sample() {
  Report r;
  r.tool_version = "9.9";
  Process p;
  p.pid = 42;
  p.command = {"./app"};
  r.processes.push_back(p);
  // process_batch inlined into main: one return address, two lines.
  r.profile_sites.push_back(
      site(0, "cudaMalloc",
           {native(0x1000, "process_batch", "/opt/libkernels.so", 0x100, 37),
            native(0x1000, "main", "/opt/libkernels.so", 0x100, 48), native(0x5000, "main", "/build/app", 0x400, 50)},
           8192, 12288));
  r.profile_sites.push_back(site(-1, "cudaMallocHost", {native(0x5100, "upload", "/build/app", 0x500, 25)}, 4096, 0));
  ProfileSite cache = site(0, "cudaMalloc", {}, 20 << 20, 20 << 20);
  cache.site = "PyTorch's caching allocator on device 0, reserved and not handed out";
  r.profile_sites.push_back(cache);
  return r;
}

std::string gunzip(const std::string& in) {
  z_stream z{};
  REQUIRE(inflateInit2(&z, 15 + 16) == Z_OK);
  std::string out(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  CHECK(inflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

}  // namespace

TEST_CASE("pprof: Go's heap profile's sample types and the peak's, every site once, labels for API, device and host") {
  const Report r = sample();
  const std::string message = render_pprof_message(r);
  CHECK(gunzip(render_pprof(r)) == message);  // a gzip file, as pprof readers expect
  pb::Profile p;
  REQUIRE(p.ParseFromString(message));
  const auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  REQUIRE(p.string_table_size() > 0);
  CHECK(p.string_table(0).empty());
  std::vector<std::string> types;
  for (const pb::ValueType& t : p.sample_type()) types.push_back(str(t.type()) + "/" + str(t.unit()));
  CHECK(types == std::vector<std::string>{"alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
                                          "inuse_space/bytes", "peak_objects/count", "peak_space/bytes"});
  CHECK(str(p.default_sample_type()) == "inuse_space");
  REQUIRE(p.sample_size() == 3);
  const pb::Sample& first = p.sample(0);
  CHECK(std::vector<int64_t>(first.value().begin(), first.value().end()) ==
        std::vector<int64_t>{3, 12288, 2, 8192, 3, 12288});
  std::map<std::string, std::string> labels;
  for (const pb::Label& l : first.label()) labels[str(l.key())] = l.str() ? str(l.str()) : std::to_string(l.num());
  CHECK(labels == std::map<std::string, std::string>{{"api", "cudaMalloc"}, {"device", "0"}, {"pid", "42"}});
  labels.clear();
  for (const pb::Label& l : p.sample(1).label())
    labels[str(l.key())] = l.str() ? str(l.str()) : std::to_string(l.num());
  CHECK(labels["memory"] == "host");
  CHECK(labels.count("device") == 0);

  // The inlined call is one location with two lines, innermost first; the leaf location first.
  std::map<uint64_t, const pb::Location*> locations;
  for (const pb::Location& l : p.location()) locations[l.id()] = &l;
  std::map<uint64_t, std::string> functions;
  for (const pb::Function& f : p.function()) functions[f.id()] = str(f.name());
  REQUIRE(first.location_id_size() == 2);
  const pb::Location& leaf = *locations.at(first.location_id(0));
  REQUIRE(leaf.line_size() == 2);
  CHECK(functions.at(leaf.line(0).function_id()) == "process_batch");
  CHECK(leaf.line(0).line() == 37);
  CHECK(functions.at(leaf.line(1).function_id()) == "main");
  CHECK(leaf.address() == 0x1000);
  // A site without a stack is named by what it is.
  const pb::Location& cache = *locations.at(p.sample(2).location_id(0));
  CHECK(functions.at(cache.line(0).function_id()) ==
        "PyTorch's caching allocator on device 0, reserved and not handed out");

  // Mappings: the executable first (pprof's main binary), loaded where its frames say.
  REQUIRE(p.mapping_size() == 2);
  CHECK(str(p.mapping(0).filename()) == "/build/app");
  CHECK(p.mapping(0).memory_start() == 0x5000 - 0x400);
  CHECK(p.mapping(0).has_functions());
  CHECK(str(p.mapping(1).filename()) == "/opt/libkernels.so");
  CHECK(leaf.mapping_id() == p.mapping(1).id());
}

TEST_CASE("pprof: a profile of no sites is still a profile, and says when stacks were sampled") {
  Report r;
  r.profile_sites_sampled = true;
  pb::Profile p;
  REQUIRE(p.ParseFromString(render_pprof_message(r)));
  CHECK(p.sample_size() == 0);
  CHECK(p.sample_type_size() == 6);
  bool said = false;
  for (int64_t c : p.comment()) said |= p.string_table(static_cast<int>(c)).find("sampled") != std::string::npos;
  CHECK(said);
}

TEST_CASE("a Python program's profile stack: the framework's native frames, then the user's Python lines") {
  const std::vector<Frame> stack = {
      native(0x10, "_PyObject_MakeTpCall", "/usr/bin/python3.12", 0x10),  // the hook's call, in the interpreter
      native(0x20, "pool_malloc", "/site/_memory.so", 0x20),
      native(0x30, "_PyEval_EvalFrameDefault", "/usr/lib/libpython3.12.so.1.0", 0x30),
      native(0x40, "ufunc_call", "/site/_multiarray.so", 0x40),
      native(0x50, "Py_RunMain", "/usr/bin/python3.12", 0x50),
      native(0x60, "", "/lib/x86_64-linux-gnu/libc.so.6", 0x60),
      native(0x70, "__libc_start_main", "/lib/x86_64-linux-gnu/libc.so.6", 0x70),
      python("/home/me/train.py", 16, "step"),
      python("/home/me/train.py", 30, "<module>"),
  };
  std::vector<std::string> shown;
  for (const Frame* f : profile_frames(stack)) shown.push_back(f->function);
  CHECK(shown == std::vector<std::string>{"pool_malloc", "ufunc_call", "step", "<module>"});
  CHECK(is_interpreter_frame(stack[2]));
  CHECK_FALSE(is_interpreter_frame(stack[1]));

  // A native program's stack is shown whole, libc's start included.
  const std::vector<Frame> plain = {native(0x20, "f", "/build/app", 0x20), stack[6]};
  CHECK(profile_frames(plain).size() == 2);
}
