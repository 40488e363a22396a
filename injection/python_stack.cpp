#include "python_stack.h"

#include <dlfcn.h>
#include <sys/types.h>

#include <atomic>
#include <cstring>

#include "readable_memory.h"
#include "seen_ids.h"
#include "trace_format.h"
#include "trace_writer.h"

namespace cuaudit::inject {
namespace {

using PyObj = void;  // PyObject*, PyFrameObject*, PyCodeObject*, PyThreadState*: opaque here

struct PythonApi {
  int (*is_initialized)() = nullptr;
  int (*is_finalizing)() = nullptr;  // Py_IsFinalizing (3.13) or _Py_IsFinalizing; may be missing
  int (*gil_check)() = nullptr;
  PyObj* (*this_thread_state)() = nullptr;
  PyObj* (*thread_state_frame)(PyObj*) = nullptr;  // new reference
  PyObj* (*frame_back)(PyObj*) = nullptr;          // new reference
  PyObj* (*frame_code)(PyObj*) = nullptr;          // new reference
  int (*frame_line)(PyObj*) = nullptr;
  PyObj* (*get_attr)(PyObj*, const char*) = nullptr;
  const char* (*utf8)(PyObj*, ssize_t*) = nullptr;
  void (*decref)(PyObj*) = nullptr;
  void (*err_fetch)(PyObj**, PyObj**, PyObj**) = nullptr;
  void (*err_restore)(PyObj*, PyObj*, PyObj*) = nullptr;
  void (*err_clear)() = nullptr;
  int (*gc_disable)() = nullptr;  // 3.10+; may be missing
  int (*gc_enable)() = nullptr;
  bool ready = false;
  // CPython 3.12+: frames read in place (below).
  unsigned long version = 0;        // Py_Version, 0x030c00f0 for 3.12.0
  const void* code_type = nullptr;  // &PyCode_Type
  const void* unicode_type = nullptr;
  int (*frame_line_in_place)(void*) = nullptr;  // PyUnstable_InterpreterFrame_GetLine
};
PythonApi g_py;

// CPython 3.12 and later: a thread's frames are read in place, without the GIL, which PyTorch
// releases around every operator (the CUDA allocations happen there). This thread is blocked in
// C code for as long as the callback runs, so its frames cannot change, and nothing is allocated
// or reference-counted: only reads of the frame chain (`_PyInterpreterFrame`: the code object,
// then the previous frame), of code objects' names and of compact ASCII strings, plus
// PyUnstable_InterpreterFrame_GetLine. The offsets that differ between versions are found once,
// by looking for the objects' types, with every probe checked readable first.
struct InPlaceLayout {
  size_t frame_field = 0;  // where the thread state points at the current frame (3.12: via _PyCFrame)
  bool via_cframe = false;
  size_t filename_field = 0;  // co_filename; co_name and co_qualname follow it
};
InPlaceLayout g_layout;
std::atomic<int> g_layout_state{0};  // 0 unknown, 1 being found, 2 found, 3 not available

constexpr size_t kFramePrevious = 8;  // _PyInterpreterFrame: code object, then `previous`
constexpr size_t kObjectType = 8;     // PyObject: refcount, then type
constexpr size_t kAsciiLength = 16;   // PyASCIIObject (3.12+): length, hash, state, then the text
constexpr size_t kAsciiState = 32;
constexpr size_t kAsciiData = 40;

uint64_t word_at(const void* base, size_t offset) noexcept {
  uint64_t v;
  memcpy(&v, static_cast<const char*>(base) + offset, sizeof v);
  return v;
}

bool is_object_of(uint64_t p, const void* type) noexcept {
  return p && readable_memory(p, 16) &&
         word_at(reinterpret_cast<void*>(p), kObjectType) == reinterpret_cast<uint64_t>(type);
}

bool is_frame(uint64_t p) noexcept {
  return p && readable_memory(p, 16) && is_object_of(word_at(reinterpret_cast<void*>(p), 0), g_py.code_type);
}

bool find_layout(void* thread) noexcept {
  InPlaceLayout l;
  l.via_cframe = g_py.version < 0x030d0000;  // 3.12 keeps the current frame in a _PyCFrame
  for (size_t off = 16; off < 512 && !l.frame_field; off += 8) {
    const uint64_t p = reinterpret_cast<uintptr_t>(thread) + off;
    if (!readable_memory(p, 8)) break;
    const uint64_t v = word_at(thread, off);
    if (l.via_cframe ? (v && readable_memory(v, 8) && is_frame(word_at(reinterpret_cast<void*>(v), 0))) : is_frame(v))
      l.frame_field = off;
  }
  if (!l.frame_field) return false;
  const uint64_t frame = l.via_cframe ? word_at(reinterpret_cast<void*>(word_at(thread, l.frame_field)), 0)
                                      : word_at(thread, l.frame_field);
  const auto* code = reinterpret_cast<const void*>(word_at(reinterpret_cast<void*>(frame), 0));
  for (size_t off = 24; off + 24 <= 256 && !l.filename_field; off += 8) {
    if (!readable_memory(reinterpret_cast<uintptr_t>(code) + off, 24)) break;
    if (is_object_of(word_at(code, off), g_py.unicode_type) &&
        is_object_of(word_at(code, off + 8), g_py.unicode_type) &&
        is_object_of(word_at(code, off + 16), g_py.unicode_type))
      l.filename_field = off;
  }
  if (!l.filename_field) return false;
  g_layout = l;
  return true;
}

// Finds the layout on the first thread that has a Python frame; false until then, or for good
// when this interpreter's layout is not the expected one.
bool in_place_ready(void* thread) noexcept {
  int state = g_layout_state.load(std::memory_order_acquire);
  if (state == 2) return true;
  if (state != 0 || !g_py.code_type || !g_py.unicode_type || !g_py.frame_line_in_place || g_py.version < 0x030c0000)
    return false;
  if (!g_layout_state.compare_exchange_strong(state, 1)) return false;
  // A thread without a Python frame (a C++ worker) is no verdict: try again on later ones, a
  // bounded number of times, since each try costs a few dozen system calls.
  static int attempts = 0;
  const bool found = find_layout(thread);
  g_layout_state.store(found ? 2 : ++attempts < 64 ? 0 : 3, std::memory_order_release);
  return found;
}

void* current_frame(void* thread) noexcept {
  const uint64_t v = word_at(thread, g_layout.frame_field);
  if (!v) return nullptr;
  return reinterpret_cast<void*>(g_layout.via_cframe ? word_at(reinterpret_cast<void*>(v), 0) : v);
}

// A compact ASCII str's text (names and paths are ASCII almost always; others show as "?").
size_t ascii_text(uint64_t str, char* out) noexcept {
  if (!str || word_at(reinterpret_cast<void*>(str), kObjectType) != reinterpret_cast<uint64_t>(g_py.unicode_type))
    return 0;
  uint32_t state;
  memcpy(&state, reinterpret_cast<const char*>(str) + kAsciiState, sizeof state);
  const bool compact = state & (1u << 5), ascii = state & (1u << 6);
  if (!compact || !ascii) {
    out[0] = '?';
    return 1;
  }
  size_t n = word_at(reinterpret_cast<void*>(str), kAsciiLength);
  if (n > trace::kMaxPythonName) n = trace::kMaxPythonName;
  memcpy(out, reinterpret_cast<const char*>(str) + kAsciiData, n);
  return n;
}

template <typename F>
bool find(F& out, const char* name) noexcept {
  out = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return out != nullptr;
}

thread_local SeenIds tls_seen;

// What one capture read: the frames' code objects (held) and lines, innermost first.
struct RawPythonStack {
  PyObj* code[trace::kMaxPythonDepth];  // held (API reader) or borrowed from live frames (in place)
  uint32_t line[trace::kMaxPythonDepth];
  size_t depth = 0;
  bool in_place = false;
};

uint64_t hash_stack(const RawPythonStack& s) noexcept {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ s.depth;
  for (size_t i = 0; i < s.depth; ++i) {
    h ^= reinterpret_cast<uintptr_t>(s.code[i]) + (uint64_t{s.line[i]} << 48);
    h *= 0x100000001b3ull;
    h ^= h >> 31;
  }
  return h ? h : 1;
}

// Copies a code object's string attribute into `out` (at most kMaxPythonName bytes).
size_t code_string(PyObj* code, const char* attribute, const char* fallback, char* out) noexcept {
  PyObj* value = g_py.get_attr(code, attribute);
  if (!value && fallback) {  // co_qualname is 3.11+
    g_py.err_clear();
    value = g_py.get_attr(code, fallback);
  }
  if (!value) g_py.err_clear();
  if (!value) return 0;
  ssize_t bytes = 0;
  const char* text = g_py.utf8(value, &bytes);
  size_t n = text && bytes > 0 ? static_cast<size_t>(bytes) : 0;
  if (n > trace::kMaxPythonName) n = trace::kMaxPythonName;
  if (n) memcpy(out, text, n);
  g_py.decref(value);
  return n;
}

void write_stack(uint64_t id, const RawPythonStack& s) noexcept {
  struct Out {
    trace::PythonStackRecord record;
    trace::PythonFrame frames[trace::kMaxPythonDepth];
    char names[trace::kMaxPythonDepth * 2 * trace::kMaxPythonName];
  };
  static thread_local Out out;  // ~24 KiB: not on a callback's stack
  size_t used = 0;
  for (size_t i = 0; i < s.depth; ++i) {
    size_t file, function;
    if (s.in_place) {
      file = ascii_text(word_at(s.code[i], g_layout.filename_field), out.names + used);
      function = ascii_text(word_at(s.code[i], g_layout.filename_field + 16), out.names + used + file);  // co_qualname
    } else {
      file = code_string(s.code[i], "co_filename", nullptr, out.names + used);
      function = code_string(s.code[i], "co_qualname", "co_name", out.names + used + file);
    }
    out.frames[i] = {s.line[i], static_cast<uint16_t>(file), static_cast<uint16_t>(function)};
    used += file + function;
  }
  // Frames and names travel as one tail: the names follow the last frame directly.
  char* tail = reinterpret_cast<char*>(out.frames);
  const size_t frame_bytes = s.depth * sizeof(trace::PythonFrame);
  memmove(tail + frame_bytes, out.names, used);
  out.record = {};
  out.record.id = id;
  out.record.depth = static_cast<uint32_t>(s.depth);
  trace_writer().append_with_tail(out.record, tail, frame_bytes + used);
}

}  // namespace

void resolve_python_api() noexcept {
  PythonApi p;
  const bool found = find(p.is_initialized, "Py_IsInitialized") && find(p.gil_check, "PyGILState_Check") &&
                     find(p.this_thread_state, "PyGILState_GetThisThreadState") &&
                     find(p.thread_state_frame, "PyThreadState_GetFrame") && find(p.frame_back, "PyFrame_GetBack") &&
                     find(p.frame_code, "PyFrame_GetCode") && find(p.frame_line, "PyFrame_GetLineNumber") &&
                     find(p.get_attr, "PyObject_GetAttrString") && find(p.utf8, "PyUnicode_AsUTF8AndSize") &&
                     find(p.decref, "Py_DecRef") && find(p.err_fetch, "PyErr_Fetch") &&
                     find(p.err_restore, "PyErr_Restore") && find(p.err_clear, "PyErr_Clear");
  if (!found) return;  // not a Python process (or one older than 3.9)
  if (!find(p.is_finalizing, "Py_IsFinalizing")) find(p.is_finalizing, "_Py_IsFinalizing");
  find(p.gc_disable, "PyGC_Disable");
  find(p.gc_enable, "PyGC_Enable");
  if (const auto* version = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"))) p.version = *version;
  p.code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
  p.unicode_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  find(p.frame_line_in_place, "PyUnstable_InterpreterFrame_GetLine");
  p.ready = true;
  g_py = p;
}

namespace {

uint64_t capture_in_place(void* thread) noexcept {
  static thread_local RawPythonStack s;
  s.depth = 0;
  s.in_place = true;
  for (void* frame = current_frame(thread); frame && s.depth < trace::kMaxPythonDepth;
       frame = reinterpret_cast<void*>(word_at(frame, kFramePrevious))) {
    const uint64_t code = word_at(frame, 0);
    if (!code || word_at(reinterpret_cast<void*>(code), kObjectType) != reinterpret_cast<uint64_t>(g_py.code_type))
      break;
    s.code[s.depth] = reinterpret_cast<PyObj*>(code);
    const int line = g_py.frame_line_in_place(frame);
    s.line[s.depth] = line > 0 ? static_cast<uint32_t>(line) : 0;
    ++s.depth;
  }
  if (!s.depth) return 0;
  const uint64_t id = hash_stack(s);
  if (!tls_seen.check_and_insert(id)) write_stack(id, s);
  return id;
}

}  // namespace

uint64_t capture_python_stack() noexcept {
  if (!g_py.ready || !g_py.is_initialized() || (g_py.is_finalizing && g_py.is_finalizing())) return 0;
  PyObj* thread = g_py.this_thread_state();
  if (!thread) return 0;
  if (in_place_ready(thread)) return capture_in_place(thread);
  // Older interpreters: through the C API, only while this thread holds the GIL.
  if (g_py.gil_check() != 1) return 0;

  PyObj *error_type = nullptr, *error_value = nullptr, *error_traceback = nullptr;
  g_py.err_fetch(&error_type, &error_value, &error_traceback);
  const bool gc_was_enabled = g_py.gc_disable && g_py.gc_enable && g_py.gc_disable();

  static thread_local RawPythonStack s;
  s.depth = 0;
  s.in_place = false;
  PyObj* frame = g_py.thread_state_frame(thread);
  while (frame && s.depth < trace::kMaxPythonDepth) {
    s.code[s.depth] = g_py.frame_code(frame);
    s.line[s.depth] = static_cast<uint32_t>(g_py.frame_line(frame));
    if (s.code[s.depth]) ++s.depth;
    PyObj* back = g_py.frame_back(frame);
    g_py.decref(frame);
    frame = back;
  }
  if (frame) g_py.decref(frame);

  uint64_t id = 0;
  if (s.depth) {
    id = hash_stack(s);
    if (!tls_seen.check_and_insert(id)) write_stack(id, s);
  }
  for (size_t i = 0; i < s.depth; ++i) g_py.decref(s.code[i]);
  if (gc_was_enabled) g_py.gc_enable();
  g_py.err_restore(error_type, error_value, error_traceback);
  return id;
}

void forget_written_python_stacks() noexcept { tls_seen.clear(); }

}  // namespace cuaudit::inject
