// The short form of a demangled C++ function name that charts, legends and one-line lists show:
// its qualified name without return type, template arguments or parameters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cuaudit::report {

// "void std::vector<float>::_M_realloc_insert<float const&>(iterator, float const&)" ->
// "std::vector::_M_realloc_insert"; "Buffer<float>::~Buffer()" -> "Buffer::~Buffer";
// "Pool::operator()(unsigned long)" -> "Pool::operator()"; "(anonymous namespace)::f(int) const"
// -> "(anonymous namespace)::f"; a name that is not C++ ("main", "<module>") as it is.
std::string short_function_name(std::string_view demangled);

struct Frame;
// A site's name from its frames alone: the first frame with a source line ("upload app.cu:42"),
// else the first with a function, and its module ("serve (libapp.so)"), else the first frame's
// module and offset ("libcublas.so.13+0x1f38ab"), else "?".
std::string stack_site_name(const std::vector<Frame>& stack);

}  // namespace cuaudit::report
