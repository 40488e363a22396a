#include "kernel_names.h"

#include <cstdlib>
#include <memory>

#include "kernel_signature.h"

namespace cuaudit {
namespace {

struct Demangled {
  std::unique_ptr<char, decltype(&free)> text{nullptr, &free};
};

Demangled demangled(const std::string& name) {
  Demangled d;
  d.text.reset(demangle_kernel_name(name.c_str()));
  return d;
}

}  // namespace

std::string kernel_display_name(const std::string& name) {
  const Demangled d = demangled(name);
  if (!d.text) return name;
  std::string text = d.text.get();
  // Template instantiations read "void fill<int4>(int4*, int)": the return type adds nothing.
  if (text.rfind("void ", 0) == 0) text.erase(0, 5);
  return text;
}

std::string kernel_param_type(const std::string& name, uint16_t index) {
  const Demangled d = demangled(name);
  if (!d.text) return {};
  KernelSignature signature;
  if (!parse_kernel_params(d.text.get(), signature) || index >= signature.count) return {};
  const KernelParam& p = signature.params[index];
  return std::string(d.text.get() + p.type_begin, p.type_bytes);
}

uint32_t kernel_pointer_alignment(const std::string& name, uint16_t index) {
  const Demangled d = demangled(name);
  if (!d.text) return 0;
  KernelSignature signature;
  if (!parse_kernel_params(d.text.get(), signature) || index >= signature.count) return 0;
  return signature.params[index].is_pointer ? signature.params[index].alignment : 0;
}

}  // namespace cuaudit
