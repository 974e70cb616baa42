// Percentiles of measured samples, one rule for the harness, the micro-benchmarks and the
// tools: linear interpolation between the closest ranks (the usual default, as numpy's
// percentile and Python's statistics.median compute it), so the median of an even count is the
// mean of the middle two. Header-only and without JSON, for programs that link only CUDA.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace coop::bench {

/// Samples sorted once, read at any percentile.
class Percentiles {
 public:
  explicit Percentiles(std::vector<double> samples) : v_(std::move(samples)) {
    std::sort(v_.begin(), v_.end());
  }
  std::size_t n() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  /// The p-quantile, p in [0, 1] (0 when there are no samples).
  double at(double p) const {
    if (v_.empty()) return 0;
    const double x = std::clamp(p, 0.0, 1.0) * double(v_.size() - 1);
    const std::size_t lo = std::size_t(x), hi = std::min(lo + 1, v_.size() - 1);
    return v_[lo] + (v_[hi] - v_[lo]) * (x - double(lo));
  }
  double median() const { return at(0.5); }
  double min() const { return v_.empty() ? 0 : v_.front(); }
  double max() const { return v_.empty() ? 0 : v_.back(); }
  const std::vector<double>& sorted() const { return v_; }

 private:
  std::vector<double> v_;
};

/// The p-quantile of the samples (0 when there are none).
inline double percentile(std::vector<double> samples, double p) {
  return Percentiles(std::move(samples)).at(p);
}
inline double median(std::vector<double> samples) { return percentile(std::move(samples), 0.5); }

}  // namespace coop::bench
