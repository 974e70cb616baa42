#include "coop/cuda/green.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <type_traits>

#include "coop/cuda/check.hpp"
#include "driver.hpp"

namespace coop::cuda {

namespace {

// The driver's green-context calls, looked up once.
struct Driver {
  CUresult (*get_resource)(CUdevice, CUdevResource*, CUdevResourceType) = nullptr;
  CUresult (*split)(CUdevResource*, unsigned*, const CUdevResource*, CUdevResource*, unsigned,
                    unsigned) = nullptr;
  CUresult (*desc)(CUdevResourceDesc*, CUdevResource*, unsigned) = nullptr;
  CUresult (*create)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned) = nullptr;
  CUresult (*destroy)(CUgreenCtx) = nullptr;
  CUresult (*stream)(CUstream*, CUgreenCtx, unsigned, int) = nullptr;
  CUresult (*green_resource)(CUgreenCtx, CUdevResource*, CUdevResourceType) = nullptr;
  std::string missing;

  Driver() {
    auto get = [&](const char* name, auto& fn) {
      void* p = driver_entry_point(name, CUDA_VERSION);
      if (!p && missing.empty()) missing = std::string("the driver has no ") + name;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    get("cuDeviceGetDevResource", get_resource);
    get("cuDevSmResourceSplitByCount", split);
    get("cuDevResourceGenerateDesc", desc);
    get("cuGreenCtxCreate", create);
    get("cuGreenCtxDestroy", destroy);
    get("cuGreenCtxStreamCreate", stream);
    get("cuGreenCtxGetDevResource", green_resource);
  }
};

const Driver& driver() {
  static const Driver d;
  if (!d.missing.empty()) throw std::runtime_error("green contexts: " + d.missing);
  return d;
}

void check_cu(CUresult r, const std::string& what) {
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(what + ": the driver returned CUresult " + std::to_string(int(r)));
}

}  // namespace

bool green_contexts_available(std::string* why) {
  try {
    (void)driver();
    return true;
  } catch (const std::runtime_error& e) {
    if (why) *why = e.what();
    return false;
  }
}

int green_context_sms(CUgreenCtx_st* green) {
  CUdevResource r{};
  check_cu(driver().green_resource(green, &r, CU_DEV_RESOURCE_TYPE_SM),
           "reading a green context's SMs");
  return int(r.sm.smCount);
}

CUstream_st* green_stream(CUgreenCtx_st* green, int priority, const char* what) {
  CUstream s = nullptr;
  check_cu(driver().stream(&s, green, CU_STREAM_NON_BLOCKING, priority), what);
  return s;
}

GreenSplit::GreenSplit(int device, unsigned want) {
  const Driver& d = driver();
  // The driver works on the device's primary context; make it exist on this thread.
  check(cudaSetDevice(device), "selecting the device");
  check(cudaFree(nullptr), "initialising the device");
  CUdevResource all{}, part{}, rest{};
  check_cu(d.get_resource(CUdevice(device), &all, CU_DEV_RESOURCE_TYPE_SM), "reading the SMs");
  unsigned groups = 1;
  check_cu(d.split(&part, &groups, &all, &rest, 0, want),
           "splitting " + std::to_string(all.sm.smCount) + " SMs into " + std::to_string(want) +
               " and the rest");
  if (groups < 1 || rest.sm.smCount == 0)
    throw std::runtime_error("green contexts: " + std::to_string(want) + " of " +
                             std::to_string(all.sm.smCount) + " SMs leave none for the rest");
  CUdevResourceDesc dp{}, dr{};
  check_cu(d.desc(&dp, &part, 1), "describing a green context");
  check_cu(d.desc(&dr, &rest, 1), "describing a green context");
  check_cu(d.create(&part_, dp, CUdevice(device), CU_GREEN_CTX_DEFAULT_STREAM),
           "creating a green context");
  try {
    check_cu(d.create(&rest_, dr, CUdevice(device), CU_GREEN_CTX_DEFAULT_STREAM),
             "creating a green context");
  } catch (...) {
    d.destroy(part_);
    throw;
  }
  part_sms_ = part.sm.smCount;
  rest_sms_ = rest.sm.smCount;
}

GreenSplit::~GreenSplit() {
  const Driver& d = driver();
  d.destroy(part_);
  d.destroy(rest_);
}

}  // namespace coop::cuda
