// The float matrix product the high-priority tasks of `coop demo` and `coop bench` compute:
// small integers, so every sum is exact and C can be checked exactly against a serial product.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

namespace coop::examples {

struct HostMatmul {
  explicit HostMatmul(std::uint32_t size)
      : n(size), a(std::size_t(size) * size), b(a.size()), c(a.size()) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = float(int(i * 7 % 13) - 6);
      b[i] = float(int(i * 5 % 11) - 5);
    }
  }
  /// C = A B, `products` times over, split by rows over `workers` threads (a CPU task's
  /// workgroups).
  void run_threads(std::uint32_t workers, std::uint32_t products = 1) {
    const std::uint32_t w = workers == 0 ? 1 : workers < n ? workers : n;
    std::vector<std::thread> pool;
    for (std::uint32_t g = 0; g < w; ++g)
      pool.emplace_back([this, g, w, products] {
        for (std::uint32_t p = 0; p < products; ++p)
          for (std::uint32_t i = g; i < n; i += w)
            for (std::uint32_t j = 0; j < n; ++j) {
              float s = 0;
              for (std::uint32_t k = 0; k < n; ++k) s += a[i * n + k] * b[k * n + j];
              c[i * n + j] = s;
            }
      });
    for (auto& t : pool) t.join();
  }
  /// Compares sampled entries of C with a serial product.
  bool check() const {
    const std::uint32_t step = n > 256 ? n / 16 + 1 : 1;
    for (std::uint32_t i = 0; i < n; i += step)
      for (std::uint32_t j = 0; j < n; j += 5) {
        float s = 0;
        for (std::uint32_t k = 0; k < n; ++k) s += a[i * n + k] * b[k * n + j];
        if (s != c[i * n + j]) return false;
      }
    return true;
  }

  std::uint32_t n;
  std::vector<float> a, b, c;
};

}  // namespace coop::examples
