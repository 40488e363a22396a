// What the JSON report's reader (json_report_reader.cpp, json_figures_reader.cpp) shares: typed
// access to a field with the path of a field whose type is wrong in every error, and the readers
// of a finding's figures. Internal to reports/.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "json_report.h"
#include "report_model.h"

namespace cuaudit::report::json_reading {

using nlohmann::json;

[[noreturn]] inline void bad(const std::string& where, const std::string& what) {
  throw ReportFormatError(fmt::format("{}: {}", where, what));
}

inline const json& member(const json& object, const char* name, const std::string& where) {
  static const json null_value;
  if (object.is_null()) return null_value;  // an optional object that is absent
  if (!object.is_object()) bad(where, "expected an object");
  auto it = object.find(name);
  return it == object.end() ? null_value : *it;
}

inline std::string get_text(const json& object, const char* name, const std::string& where) {
  const json& v = member(object, name, where);
  if (v.is_null()) return {};
  if (!v.is_string()) bad(where + "." + name, "expected a string");
  return v.get<std::string>();
}

// A number of type T, refused when it is not one or does not fit (found by fuzzing: converting
// 1e42 to an integer is undefined behaviour).
template <typename T>
T number_of(const json& v, const std::string& where) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) bad(where, "expected a number");
    return v.get<T>();
  } else {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) bad(where, "number out of range");
      return static_cast<T>(u);
    }
    if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
        bad(where, "number out of range");
      }
      return static_cast<T>(i);
    }
    bad(where, "expected an integer");
  }
}

template <typename T>
T get_number(const json& object, const char* name, const std::string& where, T fallback = T{}) {
  const json& v = member(object, name, where);
  if (v.is_null()) return fallback;
  return number_of<T>(v, where + "." + name);
}

template <typename T>
std::optional<T> get_optional_number(const json& object, const char* name, const std::string& where) {
  const json& v = member(object, name, where);
  if (v.is_null()) return std::nullopt;
  return number_of<T>(v, where + "." + name);
}

inline bool get_bool(const json& object, const char* name, const std::string& where, bool fallback) {
  const json& v = member(object, name, where);
  if (v.is_null()) return fallback;
  if (!v.is_boolean()) bad(where + "." + name, "expected true or false");
  return v.get<bool>();
}

inline const json& get_array(const json& object, const char* name, const std::string& where) {
  static const json empty = json::array();
  const json& v = member(object, name, where);
  if (v.is_null()) return empty;
  if (!v.is_array()) bad(where + "." + name, "expected an array");
  return v;
}

inline std::vector<std::string> get_texts(const json& object, const char* name, const std::string& where) {
  std::vector<std::string> out;
  for (const json& v : get_array(object, name, where)) {
    if (!v.is_string()) bad(where + "." + name, "expected strings");
    out.push_back(v.get<std::string>());
  }
  return out;
}

// An array of numbers (a series' column, the pids of a merged finding).
template <typename T>
std::vector<T> get_numbers(const json& object, const char* name, const std::string& where) {
  std::vector<T> out;
  for (const json& v : get_array(object, name, where)) out.push_back(number_of<T>(v, where + "." + name));
  return out;
}

inline std::optional<uint64_t> get_hex(const json& object, const char* name, const std::string& where) {
  const std::string text = get_text(object, name, where);
  if (text.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const uint64_t value = std::stoull(text, &used, 16);
    if (used != text.size()) bad(where + "." + name, "expected a hex number");
    return value;
  } catch (const std::logic_error&) {
    bad(where + "." + name, "expected a hex number");
  }
}

inline Frame frame_from(const json& frame, const std::string& at) {
  Frame f;
  f.function = get_text(frame, "function", at);
  f.mangled = get_text(frame, "mangled", at);
  f.file = get_text(frame, "file", at);
  f.line = get_number<int>(frame, "line", at);
  f.module = get_text(frame, "module", at);
  f.pc = get_hex(frame, "pc", at).value_or(0);
  f.module_offset = get_hex(frame, "module_offset", at).value_or(0);
  return f;
}

inline std::vector<Frame> stack_from(const json& object, const char* name, const std::string& where) {
  std::vector<Frame> out;
  const json& frames = get_array(object, name, where);
  for (size_t i = 0; i < frames.size(); ++i)
    out.push_back(frame_from(frames[i], fmt::format("{}.{}[{}]", where, name, i)));
  return out;
}

inline std::vector<std::pair<std::string, uint64_t>> families_from(const json& object, const std::string& where) {
  std::vector<std::pair<std::string, uint64_t>> out;
  const json& families = member(object, "families", where);
  if (families.is_null()) return out;
  if (!families.is_object()) bad(where + ".families", "expected an object");
  for (const auto& [family, bytes] : families.items()) {
    if (!bytes.is_number_unsigned()) bad(where + ".families." + family, "expected a byte count");
    out.emplace_back(family, bytes.get<uint64_t>());
  }
  return out;
}

// A finding's figures, each `null` when the finding has none.
std::optional<KernelParameter> parameter_from(const json& parameter, const std::string& at);
std::optional<OutOfMemoryState> out_of_memory_from(const json& oom, const std::string& at);
std::optional<ChurnStats> churn_from(const json& churn, const std::string& at);
std::optional<FragmentationStats> fragmentation_from(const json& j, const std::string& at);
std::optional<GrowthStats> growth_from(const json& growth, const std::string& at);

}  // namespace cuaudit::report::json_reading
