// The environment variables that carry cuaudit's settings across the process boundary, from the
// one list in environment.inc. Both sides name a variable by its enumerator, never by a literal.
#pragma once

#include <cstddef>

namespace cuaudit {

enum class EnvVar {
#define CUAUDIT_ENV(id, name, default_value, meaning) id,
#include "environment.inc"
#undef CUAUDIT_ENV
  Count
};

struct EnvVarInfo {
  const char* name;           // "CUAUDIT_TRACE_DIR"
  const char* default_value;  // what an unset variable means ("" : nothing)
  const char* meaning;
};

inline constexpr EnvVarInfo kEnvVars[] = {
#define CUAUDIT_ENV(id, name, default_value, meaning) {name, default_value, meaning},
#include "environment.inc"
#undef CUAUDIT_ENV
};
static_assert(sizeof(kEnvVars) / sizeof(kEnvVars[0]) == static_cast<size_t>(EnvVar::Count),
              "kEnvVars must list every EnvVar");

// The variable's name: env_name(EnvVar::TraceDir) == "CUAUDIT_TRACE_DIR".
constexpr const char* env_name(EnvVar v) { return kEnvVars[static_cast<size_t>(v)].name; }

}  // namespace cuaudit
