// --pprof FILE: every allocation site's memory as a gzipped pprof profile (profile.proto), laid
// out as Go's heap profiles are, so that `go tool pprof -top FILE`, `-diff_base OLD FILE` and every
// pprof viewer read it: sample types alloc_objects/alloc_space (over the run), inuse_objects/
// inuse_space (at the end, the default) and peak_objects/peak_space (at each device's peak: pprof's
// `-sample_index=peak_space`). Stacks are the user's frames, Python lines included; the API, the
// device and the process are labels (`-tagfocus=api=cudaMallocManaged`).
#pragma once

#include <string>

#include "report_model.h"

namespace cuaudit::report {

// The profile's protobuf message, before compression (what the tests decode).
std::string render_pprof_message(const Report& report);

// The file: render_pprof_message's bytes in gzip, as pprof readers expect.
std::string render_pprof(const Report& report);

}  // namespace cuaudit::report
