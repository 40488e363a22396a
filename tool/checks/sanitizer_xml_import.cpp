#include "sanitizer_xml_import.h"

#include <expat.h>

#include <cctype>
#include <memory>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "frame_filter.h"
#include "function_names.h"
#include "suppressions.h"
#include "symbolizer.h"
#include "text_helpers.h"

namespace cuaudit {
namespace {

// Expat's callbacks fill the records: the path of open elements says what a text belongs to.
struct XmlState {
  std::vector<std::string> open;  // element names from the root
  std::string text;               // the character data of the innermost element
  std::vector<SanitizerRecord> records;
  bool root_seen = false;
  bool wrong_root = false;
};

bool path_is(const XmlState& s, std::initializer_list<std::string_view> tail) {
  if (s.open.size() < tail.size()) return false;
  size_t i = s.open.size() - tail.size();
  for (std::string_view name : tail) {
    if (s.open[i++] != name) return false;
  }
  return true;
}

void on_start(void* data, const XML_Char* name, const XML_Char**) {
  auto& s = *static_cast<XmlState*>(data);
  if (!s.root_seen) {
    s.root_seen = true;
    s.wrong_root = std::string_view(name) != "ComputeSanitizerOutput";
  }
  s.open.emplace_back(name);
  s.text.clear();
  if (path_is(s, {"ComputeSanitizerOutput", "record"})) s.records.emplace_back();
  if (!s.records.empty() && path_is(s, {"record", "hostStack", "frame"})) s.records.back().host_stack.emplace_back();
}

void on_end(void* data, const XML_Char*) {
  auto& s = *static_cast<XmlState*>(data);
  const auto trimmed = [&] {
    const auto first = s.text.find_first_not_of(" \t\r\n");
    return first == std::string::npos ? std::string()
                                      : s.text.substr(first, s.text.find_last_not_of(" \t\r\n") - first + 1);
  };
  if (!s.records.empty()) {
    SanitizerRecord& r = s.records.back();
    if (path_is(s, {"ComputeSanitizerOutput", "record", "kind"})) r.kind = trimmed();
    if (path_is(s, {"ComputeSanitizerOutput", "record", "level"})) r.level = trimmed();
    if (path_is(s, {"ComputeSanitizerOutput", "record", "what", "text"})) r.what = trimmed();
    if (!r.host_stack.empty() && s.open.size() >= 2 && path_is(s, {"hostStack", "frame", s.open.back()})) {
      SanitizerFrame& f = r.host_stack.back();
      const std::string& field = s.open.back();
      if (field == "func") f.function = trimmed();
      if (field == "module") f.module = trimmed();
      if (field == "file" || field == "path") f.file = trimmed();
      if (field == "line") f.line = std::atoi(trimmed().c_str());
    }
  }
  s.open.pop_back();
  s.text.clear();
}

void on_text(void* data, const XML_Char* text, int length) {
  auto& s = *static_cast<XmlState*>(data);
  if (s.text.size() < 65536) s.text.append(text, static_cast<size_t>(length));  // a name, a message: short
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The cuaudit kind that reports what `r` reports ("*": every kind, at the record's stack), or
// nothing when no finding of cuaudit's is about it.
std::optional<std::string> cuaudit_kind(const SanitizerRecord& r) {
  const std::string kind = lower(r.kind), what = lower(r.what);
  if (kind == "leak" || what.rfind("leaked ", 0) == 0) return "leak";
  // A failing call: cuaudit says unchecked_error, api_error, out_of_memory, invalid_free ... there.
  if (kind == "api" || what.find("on cuda api call") != std::string::npos) return "*";
  // A kernel's misaligned access: the pointer cuaudit finds misaligned among the launch's parameters.
  if (what.find("misaligned") != std::string::npos) return "misaligned_param";
  return std::nullopt;
}

// `name` as a whole-name pattern: `*`, `?`, `#` and `\` literal.
std::string literal_pattern(const std::string& name) {
  std::string out;
  for (const char c : escape_suppression_pattern(name)) {
    if (c == '?') out += '\\';
    out += c;
  }
  return out;
}

// The frame lines for a record's host stack: from the first frame outside CUDA's libraries (where
// cuaudit's stacks begin) to main (where they end), at most 24.
std::vector<FrameLine> frame_lines(const std::vector<SanitizerFrame>& stack) {
  std::vector<FrameLine> lines;
  bool user = false;
  for (const SanitizerFrame& sf : stack) {
    report::Frame f;
    f.function = sf.function.rfind("_Z", 0) == 0 ? demangle(sf.function.c_str()) : sf.function;
    f.module = sf.module;
    f.file = sf.file;
    if (!user && is_cuda_internal(f)) continue;
    user = true;
    FrameLine l;
    if (!f.function.empty() && f.function != "??") {
      l.kind = FrameLine::Kind::Function;
      l.pattern = literal_pattern(report::short_function_name(f.function));
    } else if (!f.module.empty()) {
      l.kind = FrameLine::Kind::Object;
      l.pattern = literal_pattern(f.module);
    }  // else `...`: a frame nothing is known of
    lines.push_back(std::move(l));
    if (lines.size() == 24 || f.function == "main" || f.function.rfind("main(", 0) == 0) break;
  }
  return lines;
}

std::string one_line(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 160)) out += c == '\n' || c == '\r' ? ' ' : c;
  return out;
}

}  // namespace

std::vector<SanitizerRecord> read_sanitizer_xml(const std::string& xml) {
  XmlState state;
  std::unique_ptr<std::remove_pointer_t<XML_Parser>, decltype(&XML_ParserFree)> parser(XML_ParserCreate(nullptr),
                                                                                       XML_ParserFree);
  if (!parser) throw std::runtime_error("cannot make an XML parser (out of memory)");
  XML_SetUserData(parser.get(), &state);
  XML_SetElementHandler(parser.get(), on_start, on_end);
  XML_SetCharacterDataHandler(parser.get(), on_text);
  if (XML_Parse(parser.get(), xml.data(), static_cast<int>(std::min(xml.size(), size_t{1} << 30)), XML_TRUE) ==
      XML_STATUS_ERROR) {
    throw std::runtime_error(fmt::format("not well-formed XML: {} at line {}",
                                         XML_ErrorString(XML_GetErrorCode(parser.get())),
                                         XML_GetCurrentLineNumber(parser.get())));
  }
  if (!state.root_seen || state.wrong_root) {
    throw std::runtime_error(
        "not compute-sanitizer's XML: its root element is not <ComputeSanitizerOutput> (write it "
        "with compute-sanitizer --xml yes --save FILE)");
  }
  return std::move(state.records);
}

SanitizerImport suppressions_from_sanitizer(const std::vector<SanitizerRecord>& records, const std::string& origin) {
  SanitizerImport out;
  const std::string file = report::basename_of(origin);
  out.rules = fmt::format(
      "# cuaudit suppressions from compute-sanitizer's records in {} ({} record(s)), written by\n"
      "# `cuaudit suppressions import`: a leak or a failing CUDA call at the same host stack is suppressed.\n",
      origin, records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    const SanitizerRecord& r = records[i];
    const std::string about = fmt::format("record {} ({}: {})", i + 1, r.kind.empty() ? "?" : one_line(r.kind),
                                          one_line(r.what.empty() ? "no text" : r.what));
    const std::optional<std::string> kind = cuaudit_kind(r);
    const std::vector<FrameLine> lines = kind ? frame_lines(r.host_stack) : std::vector<FrameLine>{};
    if (!kind || lines.empty()) {
      ++out.without_rule;
      out.rules += fmt::format("# {}: no rule, {}\n", escape_suppression_pattern(about),
                               kind ? "its host stack has no frame outside CUDA's libraries"
                                    : "a device-side error, which cuaudit does not report");
      continue;
    }
    ++out.blocks;
    out.rules +=
        fmt::format("# {}\n{{\n   {} record {}\n   {}\n", escape_suppression_pattern(about), file, i + 1, *kind);
    for (const FrameLine& l : lines) out.rules += "   " + l.text() + "\n";
    out.rules += "}\n";
  }
  return out;
}

}  // namespace cuaudit
