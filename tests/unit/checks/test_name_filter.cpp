#include <doctest/doctest.h>

#include <stdexcept>

#include "name_filter.h"

using namespace cuaudit;

TEST_CASE("--kernel-name: TEXT and kns=TEXT match names that contain it, kne=NAME the bare name exactly") {
  NameFilter f;
  add_to_filter(f, "axpy", "--kernel-name");
  add_to_filter(f, "kne=scale", "--kernel-name");
  CHECK(f.matches("axpy2(float const*, float*, double2*, int, Window, int const*)"));
  CHECK(f.matches("scale(double*, int)"));
  CHECK(f.matches("ns::scale<float>(float*, int)"));
  CHECK_FALSE(f.matches("rescale(double*, int)"));
  CHECK_FALSE(f.matches("fill<int4>(int4*, int)"));
  NameFilter other;
  add_to_filter(other, "kns=fill<", "--kernel-name");
  CHECK(other.matches("fill<int4>(int4*, int)"));
  CHECK(NameFilter{}.empty());
}

TEST_CASE("--kernel-name refuses an empty name or an unknown key") {
  NameFilter f;
  CHECK_THROWS_AS(add_to_filter(f, "", "--kernel-name"), std::invalid_argument);
  CHECK_THROWS_AS(add_to_filter(f, "kns=", "--kernel-name"), std::invalid_argument);
  CHECK_THROWS_AS(add_to_filter(f, "kx=foo", "--kernel-name"), std::invalid_argument);
}
