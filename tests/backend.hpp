// Tests are written once against this header; each backend build instantiates them.
#pragma once

#include <cstdint>
#include <memory>

#include "coop/coop.hpp"

namespace coop::test {

inline std::unique_ptr<Runtime> make_runtime(std::uint32_t slots, double watchdog_s = 60) {
  RuntimeOptions o;
  o.cpu_slots = slots;
  o.watchdog_s = watchdog_s;
  return std::make_unique<Runtime>(o);
}

/// splitmix-style hash for test values.
COOP_HD constexpr std::uint64_t hash3(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t x = a * 0x9e3779b97f4a7c15ull ^
                    (b + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
                    (c + 1) * 0x94d049bb133111ebull;
  return x ^ (x >> 29);
}

}  // namespace coop::test
