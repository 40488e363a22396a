// The frames a profile shows (--pprof, and the flame graphs' collapsed stacks): a site's stack is
// its native frames (innermost first) followed, in a Python program, by the user's Python frames
// (module "python"). Where both are there, the interpreter's own native frames are what ran the
// Python ones: they are dropped, and the Python frames take their place above the native code that
// allocated (a framework's C++ or Cython), so that a tree reads from the user's line down to the
// allocator, as py-spy's and memray's native views do.
#pragma once

#include <vector>

#include "report_model.h"

namespace cuaudit::report {

// A native frame of CPython itself (libpython3.x, or a python3 executable that links it in).
bool is_interpreter_frame(const Frame& f);

// A Python frame, as the Python hooks record them.
inline bool is_python_frame(const Frame& f) { return f.module == "python"; }

// `stack` as a profile shows it, innermost first (pointers into `stack`).
std::vector<const Frame*> profile_frames(const std::vector<Frame>& stack);

}  // namespace cuaudit::report
