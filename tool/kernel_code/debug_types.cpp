#include "debug_types.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

namespace cuaudit {
namespace {

// Through typedefs and const/volatile/restrict to the type itself.
bool strip_qualifiers(Dwarf_Die* type) {
  for (int depth = 0; depth < 32; ++depth) {
    const int tag = dwarf_tag(type);
    if (tag != DW_TAG_typedef && tag != DW_TAG_const_type && tag != DW_TAG_volatile_type && tag != DW_TAG_restrict_type)
      return true;
    Dwarf_Attribute attribute;
    if (!dwarf_attr_integrate(type, DW_AT_type, &attribute) || !dwarf_formref_die(&attribute, type)) return false;
  }
  return false;
}

bool type_of(Dwarf_Die* die, Dwarf_Die* type) {
  Dwarf_Attribute attribute;
  return dwarf_attr_integrate(die, DW_AT_type, &attribute) && dwarf_formref_die(&attribute, type) &&
         strip_qualifiers(type);
}

// A pointer's pointee, if `type` is a pointer to a type with a declared alignment.
std::optional<DeclaredPointer> pointer_to(Dwarf_Die* type) {
  if (dwarf_tag(type) != DW_TAG_pointer_type) return std::nullopt;
  Dwarf_Die pointee;
  DeclaredPointer p;
  if (!type_of(type, &pointee)) return p;  // void*
  Dwarf_Attribute attribute;
  Dwarf_Word alignment = 0;
  if (dwarf_attr_integrate(&pointee, DW_AT_alignment, &attribute) && dwarf_formudata(&attribute, &alignment) == 0)
    p.alignment = static_cast<uint32_t>(alignment);
  if (const char* name = dwarf_diename(&pointee)) p.pointee = name;
  return p;
}

// The pointer members of a by-value struct (nested structs included), at their offsets.
void struct_pointers(Dwarf_Die* type, uint16_t param, uint32_t base, DeclaredPointers& out, int depth) {
  Dwarf_Die member;
  if (depth > 8 || dwarf_child(type, &member) != 0) return;
  do {
    if (dwarf_tag(&member) != DW_TAG_member) continue;
    Dwarf_Attribute attribute;
    Dwarf_Word offset = 0;
    if (!dwarf_attr_integrate(&member, DW_AT_data_member_location, &attribute) ||
        dwarf_formudata(&attribute, &offset) != 0)
      continue;
    Dwarf_Die member_type;
    if (!type_of(&member, &member_type)) continue;
    const uint64_t at = base + offset;
    if (at > UINT16_MAX) continue;
    if (auto p = pointer_to(&member_type)) {
      out[declared_key(param, static_cast<uint16_t>(at))] = *p;
    } else if (dwarf_tag(&member_type) == DW_TAG_structure_type) {
      struct_pointers(&member_type, param, static_cast<uint32_t>(at), out, depth + 1);
    }
  } while (dwarf_siblingof(&member, &member) == 0);
}

// The kernel's host-side wrapper among `parent`'s children (namespaces searched too): a
// subprogram whose linkage name is the kernel's mangled name.
bool find_in(Dwarf_Die* parent, const std::string& kernel, Dwarf_Die* found, int depth) {
  Dwarf_Die child;
  if (depth > 16 || dwarf_child(parent, &child) != 0) return false;
  do {
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_namespace && find_in(&child, kernel, found, depth + 1)) return true;
    if (tag != DW_TAG_subprogram) continue;
    Dwarf_Attribute attribute;
    const char* linkage = nullptr;
    if (dwarf_attr_integrate(&child, DW_AT_linkage_name, &attribute)) linkage = dwarf_formstring(&attribute);
    if (linkage && kernel == linkage && dwarf_haschildren(&child)) {
      *found = child;
      return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

bool find_kernel(Dwarf* dwarf, const std::string& kernel, Dwarf_Die* found) {
  Dwarf_Off offset = 0, next = 0;
  size_t header_bytes = 0;
  while (dwarf_nextcu(dwarf, offset, &next, &header_bytes, nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die unit;
    if (dwarf_offdie(dwarf, offset + header_bytes, &unit) && find_in(&unit, kernel, found, 0)) return true;
    offset = next;
  }
  return false;
}

}  // namespace

std::optional<DeclaredPointers> declared_pointers(const std::string& path, const std::string& kernel) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Dwarf* dwarf = dwarf_begin(fd, DWARF_C_READ);
  std::optional<DeclaredPointers> result;
  Dwarf_Die function;
  if (dwarf && find_kernel(dwarf, kernel, &function)) {
    result.emplace();
    Dwarf_Die parameter;
    uint16_t index = 0;
    if (dwarf_child(&function, &parameter) == 0) {
      do {
        if (dwarf_tag(&parameter) != DW_TAG_formal_parameter) continue;
        Dwarf_Die type;
        if (type_of(&parameter, &type)) {
          if (auto p = pointer_to(&type)) {
            (*result)[declared_key(index, 0)] = *p;
          } else if (dwarf_tag(&type) == DW_TAG_structure_type) {
            struct_pointers(&type, index, 0, *result, 0);
          }
        }
        ++index;
      } while (dwarf_siblingof(&parameter, &parameter) == 0);
    }
  }
  if (dwarf) dwarf_end(dwarf);
  close(fd);
  return result;
}

}  // namespace cuaudit
