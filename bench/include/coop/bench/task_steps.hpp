// Where a task's time goes on the host, for the co-location benchmarks: the caller reads the
// runtime's clock (Runtime::now_ms) before it submits and after it has the task's record, and the
// record says when the scheduler had the request, when the task was granted and when its work
// began and ended. What is neither gather nor work is the host's share of a request.
#pragma once

#include <vector>

#include "coop/stats.hpp"

namespace coop::bench {

/// Per task (ms): the call until the scheduler has the request, the grant until its work
/// begins, and its work's end until the caller has the record (the scheduler's dispatch that
/// hands the workgroups back, the handle's wake-up).
struct TaskSteps {
  std::vector<double> call_to_request, grant_to_work, work_to_return;

  void add(double called_ms, const TaskRecord& r, double returned_ms) {
    call_to_request.push_back(r.request_ms - called_ms);
    grant_to_work.push_back(r.start_ms - r.gathered_ms);
    work_to_return.push_back(returned_ms - r.end_ms);
  }
};

}  // namespace coop::bench
