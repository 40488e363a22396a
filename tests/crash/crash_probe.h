// Shared by crash_probe and its library.
#pragma once

#include <cstddef>

// A malloc of exactly this many bytes crashes inside crash_probe's own malloc.
constexpr size_t kCrashInsideMalloc = 0xC0FFEE;
