#include "pprof_report.h"

#include <zlib.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "profile.pb.h"
#include "profile_stacks.h"
#include "text_helpers.h"

namespace cuaudit::report {
namespace {

namespace pb = perftools::profiles;

// The profile under construction: strings, functions and locations each written once.
class ProfileBuilder {
 public:
  ProfileBuilder() { string_id(""); }  // string_table[0] is "" by the format's rule

  int64_t string_id(const std::string& s) {
    const auto [it, inserted] = strings_.try_emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) profile_.add_string_table(valid_utf8(s));  // proto3 strings must be UTF-8
    return it->second;
  }

  void sample_type(const char* type, const char* unit) {
    pb::ValueType* t = profile_.add_sample_type();
    t->set_type(string_id(type));
    t->set_unit(string_id(unit));
  }

  // The modules the frames came from, as mappings (a module and where it was loaded; the
  // executable first, as pprof takes the first mapping for the main binary). A frame says where
  // it returns to and how far into its module that is: the load address is the difference.
  void add_mappings(const Report& report, const std::vector<std::vector<const Frame*>>& shown) {
    const std::string executable = report.processes.empty() || report.processes.front().command.empty()
                                       ? std::string()
                                       : basename_of(report.processes.front().command.front());
    // `python3` runs /usr/bin/python3.12: the executable's name, or its name and a version.
    const auto is_executable = [&](const std::string& module) {
      const std::string name = basename_of(module);
      return !executable.empty() && name.rfind(executable, 0) == 0 &&
             (name.size() == executable.size() || name[executable.size()] == '.');
    };
    std::map<std::pair<std::string, uint64_t>, MappingRange> found;
    const auto add = [&](const Frame& f) {
      if (is_python_frame(f) || f.module.empty() || !f.module_offset || f.pc < f.module_offset) return;
      MappingRange& m = found[{f.module, f.pc - f.module_offset}];
      m.limit = std::max(m.limit, f.pc + 1);
      m.functions |= !f.function.empty();
      m.lines |= f.line > 0;
    };
    for (size_t i = 0; i < report.profile_sites.size(); ++i) {
      const ProfileSite& site = report.profile_sites[i];
      for (const Frame* f : shown[i]) add(*f);
      // The executable even where the profile leaves its frames out (the Python interpreter's).
      for (const Frame& f : site.stack) {
        if (is_executable(f.module)) add(f);
      }
    }
    std::vector<std::pair<std::pair<std::string, uint64_t>, MappingRange>> ordered(found.begin(), found.end());
    std::stable_partition(ordered.begin(), ordered.end(), [&](const auto& m) { return is_executable(m.first.first); });
    for (const auto& [key, range] : ordered) {
      pb::Mapping* m = profile_.add_mapping();
      m->set_id(static_cast<uint64_t>(profile_.mapping_size()));
      m->set_memory_start(key.second);
      m->set_memory_limit(range.limit);
      m->set_filename(string_id(key.first));
      // Symbolized already: pprof must not look for the binaries (they are on another machine).
      m->set_has_functions(range.functions);
      m->set_has_filenames(range.lines);
      m->set_has_line_numbers(range.lines);
      m->set_has_inline_frames(range.functions);
      mappings_[key] = m->id();
    }
  }

  // The frames that share one return address (a call and the calls inlined into it, innermost
  // first) are one location with a line each.
  uint64_t location_id(const std::vector<const Frame*>& frames) {
    LocationKey key;
    for (const Frame* f : frames) key.emplace_back(function_id(*f), f->line, f->pc);
    const auto [it, inserted] = locations_.try_emplace(key, locations_.size() + 1);
    if (inserted) {
      pb::Location* l = profile_.add_location();
      l->set_id(it->second);
      l->set_address(frames.front()->pc);
      const Frame& f = *frames.front();
      if (const auto m = mappings_.find({f.module, f.pc - f.module_offset}); f.module_offset && m != mappings_.end())
        l->set_mapping_id(m->second);
      for (const auto& [function, line, pc] : key) {
        pb::Line* out = l->add_line();
        out->set_function_id(function);
        out->set_line(line);
      }
    }
    return it->second;
  }

  // A frame of one name alone: a site without a stack, named by its API or its pool.
  uint64_t named_location(const std::string& name) {
    Frame f;
    f.function = name;
    return location_id({&f});
  }

  pb::Profile& profile() { return profile_; }

 private:
  struct MappingRange {
    uint64_t limit = 0;
    bool functions = false, lines = false;
  };
  using LocationKey = std::vector<std::tuple<uint64_t, int, uint64_t>>;  // function, line, address
  uint64_t function_id(const Frame& f) {
    // A frame without symbols keeps its module and offset: the same place in every run.
    const std::string name = !f.function.empty() ? f.function
                             : f.module.empty()  ? std::string("??")
                                                 : fmt::format("{}+{:#x}", basename_of(f.module), f.module_offset);
    // The linkage name, or none: a system name equal to the name would have pprof demangle and
    // shorten it again, and it cuts `<module>` (Python's) as if it were a template's arguments.
    const std::string& system = f.mangled;
    const auto key = std::make_tuple(name, system, f.file);
    const auto [it, inserted] = functions_.try_emplace(key, functions_.size() + 1);
    if (inserted) {
      pb::Function* out = profile_.add_function();
      out->set_id(it->second);
      out->set_name(string_id(name));
      out->set_system_name(string_id(system));
      out->set_filename(string_id(f.file));
    }
    return it->second;
  }

  pb::Profile profile_;
  std::unordered_map<std::string, int64_t> strings_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> functions_;
  std::map<LocationKey, uint64_t> locations_;
  std::map<std::pair<std::string, uint64_t>, uint64_t> mappings_;  // module and load address -> id
};

void add_label(pb::Sample& s, ProfileBuilder& b, const char* key, const std::string& value) {
  pb::Label* l = s.add_label();
  l->set_key(b.string_id(key));
  l->set_str(b.string_id(value));
}

void add_number_label(pb::Sample& s, ProfileBuilder& b, const char* key, int64_t value) {
  pb::Label* l = s.add_label();
  l->set_key(b.string_id(key));
  l->set_num(value);
}

// `stack`: the site's frames as the profile shows them (profile_frames).
void add_sample(ProfileBuilder& b, const ProfileSite& site, const std::vector<const Frame*>& stack) {
  pb::Sample& s = *b.profile().add_sample();
  for (size_t i = 0; i < stack.size();) {
    std::vector<const Frame*> frames{stack[i]};
    const uint64_t pc = stack[i]->pc;
    while (++i < stack.size() && pc && stack[i]->pc == pc) frames.push_back(stack[i]);
    s.add_location_id(b.location_id(frames));
  }
  if (stack.empty())
    s.add_location_id(
        b.named_location(site.site.empty() ? fmt::format("{} (no stack recorded)", site.api) : site.site));
  const auto value = [](uint64_t v) { return static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)); };
  for (const uint64_t v :
       {site.allocated_count, site.allocated_bytes, site.live_count, site.live_bytes, site.peak_count, site.peak_bytes})
    s.add_value(value(v));
  add_label(s, b, "api", site.api);
  if (site.device >= 0) {
    add_number_label(s, b, "device", site.device);
  } else {
    add_label(s, b, "memory", "host");  // pinned or registered host memory
  }
  add_number_label(s, b, "pid", static_cast<int64_t>(site.pid));
}

}  // namespace

std::string render_pprof_message(const Report& report) {
  ProfileBuilder b;
  // Go's heap profile's four types in its order, then the peak: `-sample_index=peak_space`.
  b.sample_type("alloc_objects", "count");
  b.sample_type("alloc_space", "bytes");
  b.sample_type("inuse_objects", "count");
  b.sample_type("inuse_space", "bytes");
  b.sample_type("peak_objects", "count");
  b.sample_type("peak_space", "bytes");
  pb::Profile& p = b.profile();
  p.set_default_sample_type(b.string_id("inuse_space"));
  pb::ValueType* period = p.mutable_period_type();
  period->set_type(b.string_id("space"));
  period->set_unit(b.string_id("bytes"));
  p.set_period(1);  // every allocation counted, none sampled by size
  p.add_comment(b.string_id(fmt::format("cuaudit {}: CUDA memory by allocation site", report.tool_version)));
  p.add_comment(
      b.string_id("inuse: at the end of the run; peak: at each device's highest use (summed over "
                  "devices and processes; -tagfocus=device=N for one)"));
  if (report.profile_sites_sampled)
    p.add_comment(b.string_id("stacks were sampled (--mode watch): the figures are estimates"));
  std::vector<std::vector<const Frame*>> shown;  // each site's frames as the profile shows them
  for (const ProfileSite& site : report.profile_sites) shown.push_back(profile_frames(site.stack));
  b.add_mappings(report, shown);
  for (size_t i = 0; i < report.profile_sites.size(); ++i) add_sample(b, report.profile_sites[i], shown[i]);
  std::string out;
  if (!p.SerializeToString(&out)) throw std::runtime_error("cannot encode the pprof profile");
  return out;
}

std::string render_pprof(const Report& report) {
  const std::string message = render_pprof_message(report);
  z_stream z{};
  // 15 + 16: zlib's window with a gzip header and trailer, as `gzip` writes.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("cannot start zlib's compressor");
  std::string out(deflateBound(&z, message.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(message.data()));
  z.avail_in = static_cast<uInt>(message.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END) throw std::runtime_error("cannot compress the pprof profile");
  return out;
}

}  // namespace cuaudit::report
