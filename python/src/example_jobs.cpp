// The example kernels Python can launch beside the apps: "gemm", the persistent tiled matrix
// multiply (examples/kernels/persistent_gemm.hpp), the long-running background of
// docs/colocation.md: cooperative (one job for every pass) or standalone (the plain persistent
// kernel relaunched per product, the baseline). Compiled by nvcc when the CUDA backend is built,
// so it runs on the GPU.
#include <algorithm>
#include <limits>
#include <memory>
#include <stdexcept>

#include "coop/cuda/occupancy.hpp"
#include "jobs.hpp"
#include "kernels/persistent_gemm.hpp"

namespace coop::python {
namespace {

const std::vector<std::string> kGemmParams = {"m",    "n",      "k",      "passes",  "seed",
                                              "form", "policy", "groups", "threads", "carveout"};

class GemmJob : public ThreadedJob {
 public:
  GemmJob(Runtime& rt, const Params& p)
      : ThreadedJob("gemm"),
        buffers_(dim(p, "m", 1024), dim(p, "n", 1024), dim(p, "k", 256), dim(p, "passes", 1),
                 std::uint64_t(get_int(p, "seed", 1, 0, INT64_MAX)), park_slots(rt)) {
    const bool gpu = rt.backend() == Backend::cuda;
    const apps::RunConfig rc = run_config(p);
    if (rc.form == apps::Form::multi_launch)
      throw std::invalid_argument("gemm has no multi-launch form (cooperative or standalone)");
    LaunchConfig lc;
    lc.max_groups = rc.groups;
    lc.threads = rc.threads ? rc.threads : (gpu ? examples::PersistentGemm::kThreads : 8);
    lc.policy = rc.policy;
    lc.mode = rc.form == apps::Form::standalone ? Mode::persistent : Mode::cooperative;
    lc.shared_carveout = rc.shared_carveout;
    lc.ids_by_sm = rc.ids_by_sm;
    examples::PersistentGemmBuffers::check_threads(lc.threads, gpu);
    if (gpu) {  // on the device before the kernel starts: no page faults in the first tiles
      buffers_.a.to_device();
      buffers_.b.to_device();
      buffers_.c.to_device();
    }
    start([this, &rt, lc](const std::function<void(const Job&)>& publish) {
      if (lc.mode == Mode::cooperative) {  // one job for every pass
        Job job = rt.launch<examples::PersistentGemm>(lc, buffers_.params(stop_.data()));
        publish(job);
        job.wait();
        return;
      }
      // Standalone: what users run today, a plain persistent grid launched once per product.
      for (std::uint32_t pass = 0; pass < buffers_.passes_ && !stopped(); ++pass) {
        examples::PersistentGemm::Params one = buffers_.params(stop_.data());
        one.total = one.tiles;
        *buffers_.next = 0;
        Job job = rt.launch<examples::PersistentGemm>(lc, one);
        publish(job);
        job.wait();
      }
    });
    wait_started();
  }
  ~GemmJob() override { end_thread(); }

  JobResult result() const override {
    require_finished();
    JobResult r;
    r.matrix = buffers_.c.to_vector();
    r.rows = buffers_.m_;
    r.cols = buffers_.n_;
    return r;
  }

  // C against a serial FP64 product (exact for the small-integer inputs), on a sample of rows:
  // the first, the last and rows spread between them (every row on small products).
  std::pair<bool, std::string> validate() const override {
    require_finished();
    const std::uint64_t done = *buffers_.done, tiles = buffers_.tiles();
    if (done < tiles)
      return {false, "stopped before one whole product (" + std::to_string(done) + " of " +
                         std::to_string(tiles) + " tiles)"};
    const std::uint32_t m = buffers_.m_, n = buffers_.n_;
    std::vector<std::uint32_t> rows;
    for (std::uint32_t row = 0; row < m; row += std::max<std::uint32_t>(1, m / 64))
      rows.push_back(row);
    if (rows.back() != m - 1) rows.push_back(m - 1);
    for (std::uint32_t row : rows) {
      const std::vector<float> want = buffers_.reference_rows(row, 1);
      for (std::uint32_t j = 0; j < n; ++j)
        if (buffers_.c[std::size_t(row) * n + j] != want[j])
          return {false, "C[" + std::to_string(row) + "][" + std::to_string(j) +
                             "] = " + std::to_string(buffers_.c[std::size_t(row) * n + j]) +
                             ", the reference says " + std::to_string(want[j])};
    }
    const auto checked = rows.size();
    return {true, "exact on " + std::to_string(checked) + " of " + std::to_string(m) + " rows; " +
                      std::to_string(done) + " tiles done"};
  }

  std::vector<Matrix> operands() const override {
    return {{"a", buffers_.m_, buffers_.k_, buffers_.a.to_vector()},
            {"b", buffers_.k_, buffers_.n_, buffers_.b.to_vector()}};
  }

  std::string summary() const override {
    require_finished();
    return std::to_string(buffers_.m_) + " x " + std::to_string(buffers_.n_) + " x " +
           std::to_string(buffers_.k_) + ", " + std::to_string(*buffers_.done) + " tiles done";
  }

  std::map<std::string, double> progress() const override {
    return {{"tiles_done", double(*buffers_.done)},
            {"tiles_per_product", double(buffers_.tiles())},
            {"flops_per_tile", double(buffers_.flops_per_pass()) / double(buffers_.tiles())}};
  }

  bool stop() override {
    atomic_ref<std::uint32_t>(*stop_.data()).store(1);
    return true;
  }
  bool stopped() { return atomic_ref<std::uint32_t>(*stop_.data()).load() != 0; }

 private:
  // Twice the most workgroups the job can have: at most two per SM fit on the GPU.
  static std::uint32_t park_slots(const Runtime& rt) {
    return rt.backend() == Backend::cuda ? 4 * (rt.capacity() / cuda::kUnitsPerSM)
                                         : 2 * rt.capacity();
  }
  static std::uint32_t dim(const Params& p, const char* key, std::int64_t fallback) {
    return std::uint32_t(get_int(p, key, fallback, 1, std::numeric_limits<std::int32_t>::max()));
  }
  examples::PersistentGemmBuffers buffers_;
  ManagedArray<std::uint32_t> stop_{1};
};

}  // namespace

bool is_example(const std::string& name) { return name == "gemm"; }
std::vector<std::string> example_names() { return {"gemm"}; }
std::vector<std::string> example_parameter_names(const std::string&) { return kGemmParams; }

std::unique_ptr<ThreadedJob> launch_example(Runtime& rt, const std::string&, const Params& params) {
  return std::make_unique<GemmJob>(rt, params);
}

}  // namespace coop::python
