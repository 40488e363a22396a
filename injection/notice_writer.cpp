#include "notice_writer.h"

#include <cstring>

#include "trace_writer.h"

namespace cuaudit::inject {

void write_notice(trace::NoticeCode code, const char* text) noexcept {
  trace::NoticeRecord r{};
  const size_t text_bytes = strnlen(text, 1024);
  r.code = static_cast<uint32_t>(code);
  r.text_bytes = static_cast<uint32_t>(text_bytes);
  trace_writer().append_with_tail(r, text, text_bytes);
}

}  // namespace cuaudit::inject
