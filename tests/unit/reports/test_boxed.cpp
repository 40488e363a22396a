// report::Boxed (boxed.h), the heap-held optional a Finding keeps its kinds' details in: used as
// std::optional is, and a copied finding owns a copy of its details, not a share of them.
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "boxed.h"

using cuaudit::report::Boxed;

TEST_CASE("Boxed holds a value or none, as std::optional does") {
  Boxed<std::string> empty;
  CHECK_FALSE(empty);
  CHECK_FALSE(empty.has_value());
  Boxed<std::string> text = std::string("fragmentation");
  REQUIRE(text);
  CHECK(*text == "fragmentation");
  CHECK(text->size() == 13);
  text = std::nullopt;
  CHECK_FALSE(text);
  text.emplace(3, 'x');
  CHECK(*text == "xxx");
  text.reset();
  CHECK_FALSE(text);
  const std::optional<std::string> none, some = "growth";
  CHECK_FALSE(Boxed<std::string>(none));
  CHECK(*Boxed<std::string>(some) == "growth");
}

TEST_CASE("a copy of a Boxed owns its own value, a move leaves none behind") {
  Boxed<std::string> a = std::string("out of memory");
  Boxed<std::string> b = a;
  b->append(" (copy)");
  CHECK(*a == "out of memory");
  CHECK(*b == "out of memory (copy)");
  a = b;
  CHECK(*a == "out of memory (copy)");
  const Boxed<std::string>& same = a;
  a = same;  // assigned itself: keeps its value
  CHECK(*a == "out of memory (copy)");
  Boxed<std::string> c = std::move(b);
  CHECK(*c == "out of memory (copy)");
  CHECK_FALSE(b);  // NOLINT: moved from, as std::unique_ptr leaves it
}
