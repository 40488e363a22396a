// --collapsed FILE: leaks, growing sites and what each device's peak held, as collapsed stacks
// (one line per stack, outermost frame first, frames joined by ';', then the bytes), the input of
// flamegraph.pl, speedscope and inferno. The first frame says what the bytes are: "leaked",
// "growing" or "peak_of_device_N". A Python program's stacks go from the user's Python lines to the
// native code that allocated, without the interpreter's frames (profile_stacks.h).
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

std::string render_collapsed(const Report& report);

}  // namespace cuaudit::report
